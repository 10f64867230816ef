#!/bin/sh
# Claude Code: register the proxy as a stdio MCP server for your user (all projects).
# Everything after `--` is the command Claude Code starts; `-config` is the proxy's flag.
claude mcp add --scope user gated -- python3 /home/me/bin/agentrt-proxy.pyz serve -config /home/me/proxy/proxy.json
