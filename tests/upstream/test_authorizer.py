"""An upstream gets an authorizer only when it is reached over HTTP: a stdio server's connection
never loads the OAuth code (nor the urllib, http.client and email it imports), which would add
about 1.5 MiB to every proxy that serves none."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import target_env

WHAT_AUTHORIZES = """\
import json, sys
from pathlib import Path
from agentrt_proxy.config import ServerConfig
from agentrt_proxy.upstream._servers import _authorizer

stdio = ServerConfig(name="s", manifest=Path("s.json"), command=("true",))
before = _authorizer(stdio), "agentrt_proxy.oauth.serving" in sys.modules
http = ServerConfig(name="h", manifest=Path("h.json"), endpoint="http://127.0.0.1:9/mcp")
after = type(_authorizer(http)).__name__, "agentrt_proxy.oauth.serving" in sys.modules
print(json.dumps([before, after]))
"""


def test_a_stdio_server_gets_no_authorizer_and_loads_no_oauth_code() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WHAT_AUTHORIZES],
        capture_output=True,
        text=True,
        env=target_env("source"),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (stdio_auth, stdio_loaded), (http_auth, http_loaded) = json.loads(done.stdout)
    assert stdio_auth is None and not stdio_loaded
    assert http_auth == "NoAuthorization" and http_loaded
