"""``watch (-config FILE | -db DB) [-json] [-notify] [-exec CMD] [-by WHO]``: the inbox.

On a terminal, a live screen of the waiting approvals and the recent outcomes
(``_watch_screen.py``); when standard output is not a terminal, or with ``-json``, one JSON line
per new waiting approval and per decision, until interrupted. Either way the database is
polled read-only (``_watch_feed.py``) and written only when the operator decides, through the
same binding ``approve`` uses.
"""

from __future__ import annotations

import os
import sys
import time

from agentrt_proxy.cli import _operator_frame as frame
from agentrt_proxy.cli import _watch_out as watch_out
from agentrt_proxy.cli import _who as who
from agentrt_proxy.cli._flags import UsageError
from agentrt_proxy.cli._watch_feed import POLL_SECONDS, Feed
from agentrt_proxy.text import operator_text


def command(argv: list[str]) -> int:
    fl = frame.parse(argv, ("exec", "by"), switches=("json", "notify"))
    frame.no_positionals(fl)
    command_argv = watch_out.exec_command(fl.get("exec"))
    by = fl.get("by")
    if by is None:
        by = who.deciding_user()
    if by is not None and not by.strip():
        raise UsageError(operator_text.OP_BLANK_BY)
    source = frame.database(fl)
    screen = not fl.on("json") and _terminal()
    return frame.guarded(
        "watch",
        source,
        lambda path: _watch(path, screen, fl.on("json") or not screen, fl.on("notify"), command_argv, by),
    )


def _terminal() -> bool:
    try:
        return sys.stdout.isatty() and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _watch(path: str, screen: bool, as_json: bool, notify: bool, command_argv: list[str] | None, by: str | None) -> int:
    outputs = watch_out.Outputs(os.path.abspath(path), as_json, notify, command_argv, dict(os.environ))
    with frame.opened(path, writer=False) as store:
        feed = Feed(store)
        if screen:
            from agentrt_proxy.cli import _watch_screen as watch_screen

            return watch_screen.run(path, feed, outputs, by)
        outputs.start()
        try:
            while True:
                for change in feed.poll():
                    outputs.handle(change)
                outputs.reap()
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            return 0
        finally:
            outputs.reap(wait=watch_out.NOTIFY_SECONDS)
