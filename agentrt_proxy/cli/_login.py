"""``agentrt-proxy login`` and ``logout``: an OAuth server's token, fetched or deleted (docs/oauth.md).

Operator commands, never run by ``serve``: login prints the authorization URL (and opens a
browser where there is one, unless ``-no-browser``), waits on its loopback listener for the one
callback, and keeps the token in the token file beside the database.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from agentrt_proxy.cli._flags import UsageError, parse
from agentrt_proxy.config import ConfigError, ServerConfig, load_config
from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.text import cli_text, escaping

PROGRAM = "agentrt-proxy"


def _server(argv: list[str], switches: tuple[str, ...]) -> tuple[ServerConfig, bool]:
    flags = parse(argv, options=("config",), switches=switches)
    path = flags.get("config")
    if not path or len(flags.positionals) != 1:
        raise UsageError(cli_text.LOGIN_USAGE)
    name = flags.positionals[0]
    config = load_config(path)
    server = next((s for s in config.servers if s.name == name), None)
    if server is None:
        raise ConfigError(cli_text.LOGIN_NO_SERVER.format(server=escaping.go_quote(name)))
    if server.auth is None:
        raise ConfigError(cli_text.LOGIN_NOT_OAUTH.format(server=escaping.go_quote(name)))
    return server, flags.on("no-browser")


def _fail(err: BaseException, stderr: TextIO) -> int:
    stderr.write(escaping.sanitize(f"{PROGRAM}: error: {err}") + "\n")
    return 1


def _expiry(expires_at: float | None) -> str:
    if expires_at is None:
        return cli_text.LOGIN_NO_EXPIRY
    return cli_text.LOGIN_EXPIRES.format(minutes=max(0, int(expires_at - time.time())) // 60)


def login_command(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    from agentrt_proxy.oauth.login import LOGIN_WAIT, login

    try:
        server, no_browser = _server(argv, ("no-browser",))
    except ConfigError as err:
        return _fail(err, err_out)
    assert server.auth is not None

    def show(url: str) -> None:
        out.write(cli_text.LOGIN_OPEN.format(server=escaping.go_quote(server.name), url=url) + "\n")
        out.write(cli_text.LOGIN_WAITING.format(seconds=int(LOGIN_WAIT), redirect=cli_text.LOGIN_LISTENER) + "\n")
        out.flush()

    try:
        token = login(server, show_url=show, browser=not no_browser)
    except AgentrtError as err:
        out.flush()
        return _fail(err, err_out)
    out.write(
        cli_text.LOGIN_DONE.format(
            server=escaping.go_quote(server.name),
            issuer=escaping.go_quote(token.issuer),
            expiry=_expiry(token.expires_at),
            scopes=escaping.sanitize(token.scope) or "(none named)",
            path=server.auth.token_file,
        )
        + "\n"
    )
    return 0


def logout_command(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    from agentrt_proxy.oauth.tokens import TokenFile

    try:
        server, _ = _server(argv, ())
        assert server.auth is not None
        store = TokenFile(server.auth.token_file)
        with store.locked():
            removed = store.remove(server.name)
    except UsageError:
        raise  # exit 2 with the usage, as every command
    except AgentrtError as err:
        return _fail(err, err_out)
    text = cli_text.LOGOUT_DONE if removed else cli_text.LOGOUT_NONE
    out.write(text.format(server=escaping.go_quote(server.name), path=server.auth.token_file) + "\n")
    return 0
