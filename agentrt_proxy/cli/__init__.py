"""The one program: the command table, flags, one module per command family and their views."""
