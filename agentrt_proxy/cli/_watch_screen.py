"""``watch`` on a terminal: the waiting approvals (oldest first) and the recent outcomes,
redrawn on every change and on resize, in curses from the standard library.

Keys: up/down (or k/j) select, ``a`` shows the request as ``approve`` shows it and asks y/N,
``r`` shows it and asks for the note, ``enter`` shows the run as ``show`` does, ``q`` quits.
A decision opens a writer only for that moment and is bound to the hash of the row shown
(``gate.approvals.approve_shown``/``reject_shown``, the ones ``approve`` uses).
"""

from __future__ import annotations

import contextlib
import curses
import os
from typing import Any

from agentrt_proxy.cli import _operator_frame as frame
from agentrt_proxy.cli import _operator_views as views
from agentrt_proxy.cli._watch_feed import POLL_SECONDS, Feed, summary, waited
from agentrt_proxy.cli._watch_out import Outputs
from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.gate import approvals
from agentrt_proxy.store import Approval, NotFound, approval_reason
from agentrt_proxy.text import cli_text, escaping, operator_text
from agentrt_proxy.text.cli_text import program_invocation


def run(path: str, feed: Feed, outputs: Outputs, by: str | None) -> int:
    screen = Screen(path, feed, outputs, by)
    try:
        curses.wrapper(screen.loop)
    except KeyboardInterrupt:
        pass
    finally:
        outputs.reap(wait=1)
    return 0


class Screen:
    def __init__(self, path: str, feed: Feed, outputs: Outputs, by: str | None) -> None:
        self.path, self.feed, self.outputs, self.by = path, feed, outputs, by
        self.selected = 0
        self.message = ""
        self.waiting: list[Approval] = []

    # ------------------------------------------------------------------ the loop
    def loop(self, win: Any) -> None:
        curses.curs_set(0)
        win.timeout(int(POLL_SECONDS * 1000))
        self.outputs.say = self._say  # a notifier's complaint goes on the screen, not over it
        self.outputs.start()
        while True:
            for change in self.feed.poll():
                self.outputs.handle(change)
            self.outputs.reap()
            self.waiting = self.feed.waiting()
            self.selected = max(0, min(self.selected, len(self.waiting) - 1))
            self.draw(win)
            key = win.getch()
            if key in (ord("q"), ord("Q")):
                return
            if key in (curses.KEY_DOWN, ord("j")):
                self.selected += 1
            elif key in (curses.KEY_UP, ord("k")):
                self.selected = max(0, self.selected - 1)
            elif key in (ord("a"), ord("r")) and self.waiting:
                self.decide(win, "approve" if key == ord("a") else "reject", self.waiting[self.selected])
            elif key in (curses.KEY_ENTER, 10, 13) and self.waiting:
                self.show_run(win, self.waiting[self.selected].run_id)
            # curses.KEY_RESIZE needs nothing more: the next draw reads the new size.

    def _say(self, line: str) -> None:
        self.message = line

    # ------------------------------------------------------------------ drawing
    def draw(self, win: Any) -> None:
        win.erase()
        height, width = win.getmaxyx()
        lines = self.lines(width)
        for row, (text, attr) in enumerate(lines[: height - 1]):
            _put(win, row, text, width, attr)
        _put(win, height - 1, self.message or cli_text.WATCH_KEYS, width, curses.A_REVERSE)
        win.refresh()

    def lines(self, width: int) -> list[tuple[str, int]]:
        out = [
            (cli_text.WATCH_TITLE.format(database=escaping.clean(os.path.abspath(self.path), 200)), curses.A_BOLD),
            ("", 0),
            (cli_text.WATCH_WAITING_HEAD.format(count=len(self.waiting)), curses.A_BOLD),
        ]
        if not self.waiting:
            out.append((cli_text.WATCH_NONE_WAITING, 0))
        for i, a in enumerate(self.waiting):
            marker = ">" if i == self.selected else " "
            tool = escaping.clean(views.approval_tool(a), 24)
            text = f"{marker} {waited(a):>4}  {tool:<20}  {escaping.clean(a.kind, 14):<12}  {summary(a)}"
            out.append((text, curses.A_REVERSE if i == self.selected else 0))
        out += [("", 0), (cli_text.WATCH_RECENT_HEAD, curses.A_BOLD)]
        if not self.feed.recent:
            out.append((cli_text.WATCH_NONE_RECENT, 0))
        for ev in reversed(self.feed.recent[-8:]):
            out.append(("  " + _recent(ev), 0))
        return out

    # ------------------------------------------------------------------ deciding
    def decide(self, win: Any, verb: str, chosen: Approval) -> None:
        try:
            with frame.opened(self.path, writer=True) as store:
                shown = store.get_approval(chosen.id)  # the row as it is now: the one shown
                block = views.approval_block(
                    shown, approval_reason(store, shown), program_invocation(), os.path.abspath(self.path)
                )
                note = ""
                if verb == "approve":
                    answer = self.page(
                        win, block, cli_text.WATCH_CONFIRM.format(verb="Approve", approval=shown.id, run=shown.run_id)
                    )
                    if answer.strip().lower() not in ("y", "yes"):
                        self.message = cli_text.WATCH_CANCELLED
                        return
                else:
                    note = self.page(win, block, cli_text.WATCH_NOTE)
                    if not note.strip():
                        self.message = cli_text.WATCH_CANCELLED
                        return
                if self.by is None:
                    self.message = cli_text.WATCH_NOT_DONE.format(detail=operator_text.OP_NEED_BY)
                    return
                decide = approvals.approve_shown if verb == "approve" else approvals.reject_shown
                decided = decide(store, shown.run_id, shown.id, shown.hash, self.by, note)
                self.message = cli_text.WATCH_DONE.format(
                    approval=decided.id, status=decided.status, by=escaping.clean(self.by, 60)
                )
        except (AgentrtError, NotFound) as err:
            self.message = cli_text.WATCH_NOT_DONE.format(detail=escaping.clean(str(err), 300))

    def page(self, win: Any, lines: list[str], prompt: str | None) -> str:
        """Show ``lines`` a screen at a time; then the prompt's answer (or "" with none)."""
        top = 0
        win.timeout(-1)
        try:
            while True:
                win.erase()
                height, width = win.getmaxyx()
                body = height - 1
                for row, text in enumerate(lines[top : top + body]):
                    _put(win, row, text, width, 0)
                more = top + body < len(lines)
                if more or prompt is None:
                    _put(win, height - 1, cli_text.WATCH_MORE if more else cli_text.WATCH_END, width, curses.A_REVERSE)
                    key = win.getch()
                    if key in (ord("q"), 27):
                        return ""
                    if key == curses.KEY_RESIZE:
                        continue
                    if more:
                        top += max(1, body - 1) if key == ord(" ") else 1
                    continue
                _put(win, height - 1, prompt, width, curses.A_BOLD)
                return self._read_line(win, height - 1, min(len(prompt), width - 2))
        finally:
            win.timeout(int(POLL_SECONDS * 1000))

    def _read_line(self, win: Any, row: int, col: int) -> str:
        curses.echo()
        curses.curs_set(1)
        try:
            raw = win.getstr(row, col, 1000)
        finally:
            curses.noecho()
            curses.curs_set(0)
        return bytes(raw).decode("utf-8", "replace")

    def show_run(self, win: Any, run_id: str) -> None:
        with frame.opened(self.path, writer=False) as store:
            try:
                run = store.get_run(run_id)
            except NotFound:
                return
            lines = [
                *views.run_header(run),
                "",
                *views.steps_table(store.steps_of(run_id)),
                "",
                operator_text.OP_EVENTS,
            ]
            lines += [views.event_line(e) for e in store.events_of(run_id, 0, 500)]
        self.page(win, lines, None)


def _recent(ev: Any) -> str:
    payload = views.loads(ev.payload_json)
    payload = payload if isinstance(payload, dict) else {}
    when = views.local_time(ev.at)[11:19]
    if ev.type == "approval.decided":
        note = f": {escaping.clean(str(payload.get('note', '')), 40)}" if payload.get("note") else ""
        return escaping.clean(
            f"{when}  {payload.get('approval_id', '')} {payload.get('status', '')} by {payload.get('by', '')}{note}",
            200,
        )
    finished = cli_text.WATCH_RUN_FINISHED.format(when=when, run=ev.run_id, status=payload.get("status", ""))
    return escaping.clean(finished, 200)


def _put(win: Any, row: int, text: str, width: int, attr: int) -> None:
    # The last cell of the screen, or a screen smaller than the text: curses says so.
    with contextlib.suppress(curses.error):
        win.addnstr(row, 0, text, max(0, width - 1), attr)
