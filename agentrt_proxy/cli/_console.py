"""``console -config FILE [-port N] [-no-browser] [-by WHO]``: the approvals in a browser.

An operator command, never part of ``serve`` (which opens no listener): it listens on
127.0.0.1 only (``-address`` exists only to refuse any other), on a free port unless ``-port``
names one, prints one link carrying a one-time token (``console_guard``) and opens it in the
browser when there is a display. Ctrl-C or SIGTERM ends every stream and exits 0. The
database is read as ``runs``/``show``/``verify`` read it and written only by a decision, through
the code ``approve`` and ``reject`` run (``console_decide``). See docs/console.md.
"""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import signal
import sys
import tempfile
import threading
import urllib.request
import webbrowser
from typing import Any

from agentrt_proxy.cli import _console_beacon as console_beacon
from agentrt_proxy.cli import _flags as flags
from agentrt_proxy.cli import _operator_frame as operator_frame
from agentrt_proxy.cli import _who as who
from agentrt_proxy.cli._console_context import Console
from agentrt_proxy.cli._console_guard import LOOPBACK, Guard
from agentrt_proxy.cli._console_server import Server
from agentrt_proxy.config import ConfigError, load_config
from agentrt_proxy.errors import UsageError
from agentrt_proxy.text import console_text, escaping


def command(argv: list[str]) -> int:
    fl = flags.parse(argv, options=("config", "port", "address", "by"), switches=("no-browser",))
    operator_frame.no_positionals(fl)
    config_path = fl.get("config")
    if not config_path:
        raise UsageError(console_text.CONSOLE_NEED_CONFIG)
    address = fl.get("address", LOOPBACK)
    if address != LOOPBACK:
        raise UsageError(
            console_text.CONSOLE_BAD_ADDRESS.format(text=escaping.go_quote(escaping.clean(address or "", 100)))
        )
    port = fl.integer("port", 0)
    if not 0 <= port <= 65535:
        raise UsageError(console_text.CONSOLE_BAD_PORT.format(port=port))
    by = who.decider(fl.get("by"))  # -by, else $USER, the account's name, then the uid
    browser = not fl.on("no-browser") and _display()
    source = operator_frame.Source(None, config_path)
    return operator_frame.guarded("console", source, lambda path: _run(path, config_path, port, by, browser))


def _display() -> bool:
    """A browser can be shown: a desktop platform, or a display named on this one."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _run(path: str, config_path: str, port: int, by: str, browser: bool) -> int:
    try:
        config = load_config(config_path, expand_env=False)
    except ConfigError as err:
        raise operator_frame.OperatorError(str(err)) from None
    with operator_frame.opened(path, writer=False):
        pass  # refused now (missing, newer schema, insecure mode) rather than on the first page
    stopping = threading.Event()

    def console_of(bound: int) -> Console:
        return Console(path, config, os.path.abspath(config_path), Guard(bound), escaping.clean(by, 200), stopping)

    try:
        server = Server((LOOPBACK, port), console_of)
    except OSError as err:
        raise operator_frame.OperatorError(
            console_text.CONSOLE_CANNOT_LISTEN.format(port=port, detail=err.strerror or err)
        ) from None
    url = server.console.guard.url()
    with contextlib.suppress(OSError):  # a directory it cannot write: watch just won't name the console
        console_beacon.write(path, server.console.guard.port)
    opener = ""
    previous = signal.signal(signal.SIGTERM, lambda *_: _stop(server, stopping))
    try:
        sys.stdout.write(console_text.CONSOLE_OPEN.format(url=url) + "\n")
        sys.stdout.flush()
        if browser:
            sys.stderr.write(console_text.CONSOLE_BROWSER + "\n")
            opener = _opener_file(url)
            threading.Thread(target=_open_browser, args=(opener,), daemon=True).start()
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        stopping.set()
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
        console_beacon.remove(path)
        if opener:
            shutil.rmtree(os.path.dirname(opener), ignore_errors=True)
        sys.stderr.write(console_text.CONSOLE_STOPPED + "\n")
    return 0


def _stop(server: Server, stopping: threading.Event) -> None:
    """SIGTERM: end the streams, then the loop (shutdown waits for it: from another thread)."""
    stopping.set()
    threading.Thread(target=server.shutdown, daemon=True).start()


def _opener_file(url: str) -> str:
    """A page of the user's own (0600 in a 0700 directory) that sends the browser on to the link.

    The browser is started with this file's address, not the link: a command line is readable by
    every user of the machine (``ps``), and another user who read the token there could spend it
    first. The file is removed when the console stops.
    """
    directory = tempfile.mkdtemp(prefix="agentrt-console-")
    path = os.path.join(directory, "open.html")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(console_text.opener_page(html.escape(url, quote=True)))
    return path


def _open_browser(opener: str) -> Any:
    url = "file://" + urllib.request.pathname2url(opener)
    with contextlib.suppress(Exception):  # no browser found is not the console's failure: the link is printed
        return webbrowser.open(url)
    return None
