"""``watch`` in a real terminal: tmux runs it in a pane 80x24, ``send-keys`` types and
``capture-pane`` reads the screen. A real proxy makes payments wait; the fake bank's ledger
counts what was paid.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.harness import is_error, text_of
from tests.program.test_serve_process import prefix, proxy, world
from tests.waiting import until_served

TMUX = shutil.which("tmux")
pytestmark = [
    pytest.mark.program,
    pytest.mark.anyio,
    pytest.mark.timeout(120),
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed: the real-terminal test needs it"),
]


class Pane:
    def __init__(self, socket: Path, name: str) -> None:
        self.socket, self.name = socket, name

    def tmux(self, *args: str) -> str:
        done = subprocess.run([str(TMUX), "-S", str(self.socket), *args], capture_output=True, text=True, timeout=10)
        return done.stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    async def shows(self, what: str | Callable[[str], bool], within: float = 1.0) -> str:
        """The screen once it shows ``what``; fails if it does not within ``within`` seconds."""
        test = what if callable(what) else (lambda screen: what in screen)
        deadline = time.monotonic() + within
        while True:
            screen = await anyio.to_thread.run_sync(self.screen)
            if test(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen did not show {what!r} within {within}s:\n{screen}")
            await anyio.sleep(0.05)


@contextmanager
def pane(tmp_path: Path, command: list[str], env: dict[str, str]) -> Iterator[Pane]:
    socket = tmp_path / "tmux.sock"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k in ("PYTHONPATH", "PATH"))
    line = f"env {exports} TERM=xterm USER=watcher {shlex.join(command)}; sleep 30"
    subprocess.run(
        [str(TMUX), "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "80", "-y", "24", line],
        check=True,
        timeout=10,
    )
    p = Pane(socket, "w")
    try:
        yield p
    finally:
        subprocess.run([str(TMUX), "-S", str(socket), "kill-server"], capture_output=True, timeout=10)


async def test_watch_in_a_terminal_approves_with_a_and_y_and_rejects_with_r_and_a_note(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    nina = {"to": "nina", "amount": 12}
    async with world(tmp_path, program_argv, program_env) as w, proxy(w) as host:
        until_served(w.db)
        with pane(tmp_path, [*program_argv, "watch", "-db", w.db], program_env) as p:
            await p.shows("nothing waits for you", within=10)  # the program's start, not a change
            assert prefix(await host.call("bank_pay", nina)) == "PENDING_APPROVAL"
            await p.shows(lambda s: "WAITING (1)" in s and "bank_pay" in s and "to=nina" in s)
            [approval] = w.pending()

            p.keys("a")
            shown = await p.shows("Approve " + approval.id)
            # What approve shows: the exact arguments, each field with its size.
            assert '  to (6 bytes): "nina"' in shown and "  amount (2 bytes): 12" in shown
            assert w.pending() == [approval]  # shown, not decided
            p.keys("y", "Enter")
            await p.shows(lambda s: "WAITING (0)" in s and "approved by watcher" in s)
            assert w.approvals()[0].status == "approved" and w.approvals()[0].decided_by == "watcher"

            paid = await host.call("bank_pay", nina)
            assert text_of(paid) == "paid 12.00 to nina" and not is_error(paid)
            assert w.payments() == 1

            assert prefix(await host.call("bank_pay", {"to": "otto", "amount": 3})) == "PENDING_APPROVAL"
            await p.shows(lambda s: "WAITING (1)" in s and "to=otto" in s)
            p.keys("r")
            await p.shows("note for the model")
            p.keys("-l", "otto is not a payee")
            p.keys("Enter")
            await p.shows(lambda s: "WAITING (0)" in s and "rejected by watcher: otto is not a" in s)
            assert [a.note for a in w.approvals()] == ["", "otto is not a payee"]
            refused = await host.call("bank_pay", {"to": "otto", "amount": 3})
            assert is_error(refused) and "otto is not a payee" in text_of(refused)
            assert w.payments() == 1

            p.tmux("resize-window", "-t", "w", "-x", "60", "-y", "20")
            await p.shows(lambda s: max(len(line) for line in s.splitlines()) <= 60 and "RECENT" in s)
            p.keys("q")
            await p.shows(lambda s: "WAITING" not in s, within=5)  # quit: the screen is given back
