"""The proxy as the OAuth 2.1 client of its HTTP upstreams (MCP authorization; docs/oauth.md).

``login`` (an operator's command) discovers the server's authorization server, identifies the
client and fetches a token; ``serving`` hands the wire layer the bearer token of each request,
refreshing it, and words a refusal; ``tokens`` keeps them in one file beside the database, mode
0600, under a lock. The HTTP client is the standard library's: wire-level requests and a file.

A module whose name begins with an underscore is the package's own (as h11 marks its modules):
nothing outside ``oauth`` imports it; the three above are the public ones.
"""
