"""The peer: fastmcp 4.2.3's pass-through proxy in front of the same stdio upstream.

``python fastmcp_proxy.py <python> <upstream.py>``; the environment passes through.
"""

from __future__ import annotations

import os
import sys

from fastmcp.server import create_proxy

python, script = sys.argv[1], sys.argv[2]
config = {"mcpServers": {"up": {"command": python, "args": [script], "env": dict(os.environ)}}}
create_proxy(config, name="fastmcp-proxy").run(show_banner=False)
