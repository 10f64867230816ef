"""agentrt-proxy: a local MCP proxy that gates every tool call through a durable, audited runtime."""

__version__ = "0.1.0"
