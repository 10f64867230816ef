"""Every sentence a model or an operator reads, and the escaping that makes text safe to show."""
