"""Keeping each server served: started again when it goes down, retried when it is down at
start-up (decision 0014).

A ``Supervisor`` is what a loaded tool calls through (``LoadedTool.upstream``), so a tool outlives
any one connection to its server. While the server is down, or while a tool no longer matches
its pin after a restart, a call answers ``NotSent`` naming the server: nothing is written
anywhere, so it is a known failure that ran nothing (it never blocks the tool and never asks an
operator). A call already written when the server died is the wire's to classify (unknown).

The supervisor starts the server again after a backoff (``Supervision``: 1 s doubling to 30 s),
gives up after ``tries`` starts in a row that did not stay up for the backoff's cap, checks the pin
again after every start exactly as at start-up (``registry.decide`` against the manifest read at
start-up, the pin the proxy serves), and writes one operator line per change: down (with the exit
status), up again, giving up, a tool off or back on its pin. Every check (the start-up's, each
restart's, each listing after ``tools/list_changed``) is also handed to ``Supervision.record``:
the tools checked and those withheld, each with its reason and detail (``withholding``), which
serving writes to the database for the operator's console. The handlers the layers above put in
``notification_handlers`` are handed to every new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from agentrt_proxy.canonical.durations import format_go
from agentrt_proxy.config import ServerConfig
from agentrt_proxy.mcp.errors import NotSentError
from agentrt_proxy.mcp.outcomes import NotSent, ToolOutcome
from agentrt_proxy.text import load_text, model_text, operator_text, pin_text
from agentrt_proxy.upstream._display import ToolDisplay, hints_of
from agentrt_proxy.upstream._registry import ListingFn, LoadError, LoadReport, UpstreamConnection, decide
from agentrt_proxy.upstream.pins import LiveTool, Manifest
from agentrt_proxy.upstream.withholding import (
    REFUSED_BY_CHECK,
    REMOVED_UPSTREAM,
    Withholding,
    start_up_check,
    withheld_facts,
)

__all__ = ["DEFAULT_TRIES", "Supervision", "Supervisor", "pinned_listing"]

DEFAULT_TRIES = 10  # starts in a row that did not stay up: about three minutes of trying (1+2+4+8+16+5x30 s)


def _ignore(line: str) -> None:
    """No operator to tell (``check``, tests that do not read the lines)."""


# A check recorded: (server, the tools checked, those withheld among them and why).
Recorder = Callable[[str, Sequence[str], Mapping[str, Withholding]], Awaitable[object]]


@dataclass(frozen=True)
class Supervision:
    """How servers are kept: the backoff between starts, when to give up, where the lines go.

    ``wait`` sleeps between starts; tests replace it (a recorded delay, a start held back) so no
    test sleeps through a real backoff.
    """

    report: Callable[[str], object] = _ignore  # one complete operator line per change
    first: float = 1.0
    cap: float = 30.0
    tries: int = DEFAULT_TRIES
    wait: Callable[[float], Awaitable[object]] = anyio.sleep
    # What the operator types to review a change (named in the line of a tool withheld for one).
    review_command: str = ""
    # Called (on the event loop) whenever the tools a server offers change: the host is told.
    offered_changed: Callable[[], object] | None = None
    # Awaited after every check of a listing against the pins (serving writes it to the database).
    record: Recorder | None = None

    def delay(self, attempt: int) -> float:
        """The pause before start ``attempt`` (0-based) since the server last stayed up."""
        return min(self.first * 2 ** min(attempt, 60), self.cap)


def pinned_listing(manifest: Manifest) -> list[LiveTool]:
    """The tools exactly as pinned, as a listing: what a down server's tools are decided against."""
    return [
        LiveTool(
            tool.name,
            tool.description,
            tool.annotations,
            tool.input_schema.decode("utf-8"),
            ToolDisplay(
                tool.title,
                None,
                tool.output_schema.decode("utf-8") if tool.output_schema else None,
                hints_of(tool.annotations),
            ),
        )
        for tool in manifest.tools.values()
    ]


def _delay_text(seconds: float) -> str:
    return format_go(round(seconds * 1e9))


def _how_it_ended(held: Any) -> str:
    """The exit status of a stdio server, or how an HTTP session ended."""
    status = getattr(held, "exit_status", None)
    if isinstance(status, int):
        from agentrt_proxy.mcp.stdio import exit_text  # loaded already: this server ran over stdio

        return exit_text(status)
    ended = getattr(held, "ended", None)
    return load_text.ENDED_SESSION_HOW.format(ended=ended) if ended else load_text.ENDED_SESSION


class Supervisor:
    """One server's tools' way to it, across its restarts (see the module's description)."""

    def __init__(
        self,
        server: ServerConfig,
        manifest: Manifest,
        connector: Callable[[ServerConfig], ListingFn],
        *,
        repeat_window: int,
        offered: Iterable[str],
        held: UpstreamConnection | None = None,
        down: str | None = None,
        refusal: str | None = None,
        report: LoadReport | None = None,
    ) -> None:
        self.server = server
        self.name = server.name
        self._manifest = manifest
        self._connector = connector
        self._repeat_window = repeat_window
        self._offered = sorted(set(offered))  # the remote names the host was given
        self._held = held  # the latest connection: alive while up; the dead one until replaced
        self._down: str | None = down if held is None else None  # why it is down; None while up
        # While down because it refused the credentials: the sentence a call answers (it names
        # login), in place of "down, starting it again", which a login, not a wait, mends.
        self._refusal = refusal if held is None else None
        self._ever_up = held is not None
        self._stopped = False  # gave up starting it
        self._withheld: dict[str, Withholding] = {}  # remote name -> why it no longer matches its pin
        # The start-up load's report while its check is still to be recorded (None: nothing to record).
        # A server down at start-up has none: its tools were decided against the pins, not a listing,
        # which says nothing of what changed; its first start records its own check.
        self._first_report = report if held is not None else None
        self._recording = asyncio.Lock()  # one record at a time, each of the state as it is then
        self._attempts = 0  # starts since the server last stayed up
        self._up_since = time.monotonic() if held is not None else 0.0
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._supervision = Supervision()  # the one ``start`` was given, once started
        self._relisting = asyncio.Lock()  # one listing again at a time; a burst of notes is one
        self._relists_wanted = 0
        # Shared with every connection (the same dict), so a handler put here or on the current
        # connection reaches the next one too.
        self.notification_handlers: dict[str, Callable[[Any], None]] = {}
        self.request_handlers: dict[str, Any] = {}  # the relays of the server's requests (``forward``)
        if held is not None:
            self._hand_over_handlers(held)

    # ----------------------------------------------------------------------- what tools see

    @property
    def connection(self) -> Any:
        """The wire's session of the latest connection (the dead one until it is replaced)."""
        return getattr(self._held, "connection", self._held)

    @property
    def up(self) -> bool:
        return self._down is None and self._held is not None and getattr(self._held, "alive", True)

    @property
    def manifest(self) -> Manifest:
        """The pin this server is served against (read at start-up)."""
        return self._manifest

    def listing(self) -> list[LiveTool] | None:
        """What the server listed last (``None`` while it is down or never answered)."""
        if self._held is None or self._down is not None:
            return None
        tools = getattr(self._held, "tools", None)
        return list(tools) if tools is not None else None

    def withheld(self) -> dict[str, str]:
        """The offered tools that answer not-sent because the server no longer matches their pin."""
        return {remote: withholding.sentence for remote, withholding in self._withheld.items()}

    async def call_tool(self, name: str, arguments_text: str, timeout_ns: int, **options: Any) -> ToolOutcome:
        withheld = self._withheld.get(name)
        if withheld is not None:
            return NotSent(model_text.tool_unpinned(self.name, name, withheld.sentence))
        held = self._held
        if held is None or not self.up:  # nothing is written: the server is not there to read it
            if self._refusal is not None:
                return NotSent(self._refusal)
            text = model_text.server_stopped if self._stopped else model_text.server_down
            return NotSent(text(self.name))
        # Written from here on: the wire tells a request that never left from one that did.
        wire: Any = held  # options (a progress callback…) go to a connection that takes them
        return await wire.call_tool(name, arguments_text, timeout_ns, **options)

    async def request(self, method: str, params: dict[str, Any] | None, timeout_ns: int) -> Any:
        """A request passed through (resources, prompts: ``upstream.passthrough``) to the
        latest connection; while the server is down, refused before anything is written."""
        held = self._held
        if held is None or not self.up:
            text = model_text.server_stopped if self._stopped else model_text.server_down
            raise NotSentError(text(self.name))
        wire: Any = held
        return await wire.request(method, params, timeout_ns)

    # ------------------------------------------------------------------------ supervising

    def start(self, supervision: Supervision) -> None:
        """Watch the server in the background: restart it when it goes down, retry it if down now."""
        if self._task is not None or self._closing:
            return
        self._supervision = supervision
        if self._down is not None:
            line = operator_text.server_did_not_start(
                self.name, self._down, len(self._offered), _delay_text(supervision.delay(0))
            )
            supervision.report(line)
        self._task = asyncio.get_running_loop().create_task(self._supervise(supervision))

    async def _supervise(self, supervision: Supervision) -> None:
        try:
            first, self._first_report = self._first_report, None
            if first is not None:  # the start-up load's check, recorded once
                await self._record(supervision, first)
            while not self._closing:
                if self._down is None:
                    await self._wait_down(supervision)
                    if self._closing:
                        return
                if not await self._start_again(supervision):
                    return
        except Exception as err:  # a bug, never silent: the tools answer not-sent from now on
            self._stop(supervision, f"{type(err).__name__}: {err}")

    async def _wait_down(self, supervision: Supervision) -> None:
        held = self._held
        assert held is not None  # up
        closed: Any = getattr(getattr(held, "connection", held), "closed", None)
        if closed is None:  # a connection that cannot tell (a test's fake): never restarted
            await anyio.sleep_forever()
        await closed.wait()
        if self._closing:
            return
        self._down = "down"  # calls answer not-sent from this moment, before the close below
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await held.aclose()  # reaps the process, so its exit status is known
        how = _how_it_ended(held)
        self._down = how
        if time.monotonic() - self._up_since >= supervision.cap:
            self._attempts = 0  # it stayed up: a crash now is not part of a crash loop
        if self._attempts < supervision.tries:
            supervision.report(
                operator_text.server_went_down(self.name, how, _delay_text(supervision.delay(self._attempts)))
            )

    async def _start_again(self, supervision: Supervision) -> bool:
        """Start the server after the backoff until it is up (True) or the tries are spent (False)."""
        last = self._down or "down"
        while self._attempts < supervision.tries:
            await supervision.wait(supervision.delay(self._attempts))
            self._attempts += 1
            try:
                held, listing = await self._connector(self.server)(self.server.connect_timeout / 1e9)
            except Exception as err:  # a start, handshake or listing that failed: the next try
                last = str(err) or type(err).__name__
                self._refusal = getattr(err, "authorization", None)
                continue
            try:
                withheld = await anyio.to_thread.run_sync(self._check_pin, listing)
            except BaseException:
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await held.aclose()
                raise
            self._take(held, withheld, supervision)
            await self._record(supervision)
            return True
        self._stop(supervision, last)
        return False

    def _check_pin(self, listing: list[LiveTool]) -> dict[str, Withholding]:
        """Decide the live listing as at start-up; the offered tools it no longer registers, and why."""
        try:
            tools, report = decide(self.server, self._manifest, listing, repeat_window=self._repeat_window)
        except LoadError as err:  # nothing registers now: every offered tool is off its pin
            refused = {entry.tool: (entry.kind, entry.reason) for entry in err.report.refused} if err.report else {}
            fallback = (REFUSED_BY_CHECK, str(err))
            return withheld_facts(self._manifest, [(r, *refused.get(r, fallback)) for r in self._offered], listing)
        registered = {tool.remote for tool in tools}
        refused = {entry.tool: (entry.kind, entry.reason) for entry in report.refused}
        gone = (REMOVED_UPSTREAM, pin_text.NO_LONGER_OFFERED)
        return withheld_facts(
            self._manifest,
            [(remote, *refused.get(remote, gone)) for remote in self._offered if remote not in registered],
            listing,
        )

    async def _record(self, supervision: Supervision, first: LoadReport | None = None) -> None:
        """Hand the check just made to ``supervision.record``: the offered tools, those withheld now
        (read when this record's turn comes, so a later check is never overwritten by an earlier
        one). ``first``: the start-up load's report, whose refused tools were never offered."""
        if supervision.record is None:
            return
        async with self._recording:
            checked, withheld = list(self._offered), dict(self._withheld)
            try:
                if first is not None:
                    refused, listing = [(e.tool, e.kind, e.reason) for e in first.refused], self.listing() or []
                    checked, found = await anyio.to_thread.run_sync(
                        lambda: start_up_check(self._manifest, refused, listing, checked)
                    )
                    withheld.update(found)
                await supervision.record(self.name, checked, withheld)
            except Exception as err:  # the record is the console's: it never stops the server's serving
                supervision.report(operator_text.withheld_not_recorded(self.name, f"{type(err).__name__}: {err}"))

    def _take(self, held: UpstreamConnection, withheld: dict[str, Withholding], supervision: Supervision) -> None:
        """The new connection serves from now on (no await here: no call sees half of it)."""
        self._held, self._down, self._refusal = held, None, None
        self._up_since = time.monotonic()
        self._hand_over_handlers(held)
        supervision.report(operator_text.server_up(self.name, self._attempts, again=self._ever_up))
        self._ever_up = True
        self._withhold(withheld, supervision, changed_while_up=False)

    def _withhold(self, withheld: dict[str, Withholding], supervision: Supervision, *, changed_while_up: bool) -> bool:
        """Serve ``withheld`` from now on: one operator line per tool that left or came back to its
        pin, and the host told when what it is offered changed. True when it changed."""
        before = {remote: w.sentence for remote, w in self._withheld.items()}
        self._withheld = withheld
        for remote in self._offered:
            found = withheld.get(remote)
            reason = found.sentence if found is not None else None
            if reason is not None and reason != before.get(remote):
                if changed_while_up:
                    line = operator_text.tool_changed_held(self.name, remote, reason, supervision.review_command)
                else:
                    line = operator_text.tool_off_pin(self.name, remote, reason)
                supervision.report(line)
            elif reason is None and remote in before:
                supervision.report(operator_text.tool_on_pin(self.name, remote))
        changed = set(before) != set(withheld)
        if changed and supervision.offered_changed is not None:
            supervision.offered_changed()
        return changed

    async def relist(self) -> bool:
        """The server said its tools changed (``notifications/tools/list_changed``): list them
        again at once and withhold every offered tool that no longer matches its pin (its calls
        answer that nothing was sent). True when what the host is offered changed; a listing
        that changed nothing offered changes nothing and tells no one."""
        self._relists_wanted += 1
        async with self._relisting:
            if self._relists_wanted == 0:
                return False  # a listing that began after this note already read it
            self._relists_wanted = 0
            held = self._held
            relist: Any = getattr(held, "relist", None)
            if held is None or not self.up or relist is None:
                return False  # down: the start that brings it back checks the pin anyway
            supervision = self._supervision
            try:
                listing = await relist(round(self.server.connect_timeout))
            except Exception as err:  # not answered: what is offered stays; the operator is told
                supervision.report(operator_text.relist_failed(self.name, str(err) or type(err).__name__))
                return False
            withheld = await anyio.to_thread.run_sync(self._check_pin, listing)
            if held is not self._held or self._closing:
                return False  # restarted meanwhile: that start checked its own listing
            changed = self._withhold(withheld, supervision, changed_while_up=True)
            await self._record(supervision)
            return changed

    def _stop(self, supervision: Supervision, last: str) -> None:
        self._stopped = True
        self._down = self._down or "down"
        supervision.report(operator_text.server_given_up(self.name, self._attempts, last))

    def _hand_over_handlers(self, held: Any) -> None:
        wire = getattr(held, "connection", held)
        for kind in ("notification_handlers", "request_handlers"):
            handlers, shared = getattr(wire, kind, None), getattr(self, kind)
            if isinstance(handlers, dict):
                for method, handler in handlers.items():
                    shared.setdefault(method, handler)
                setattr(wire, kind, shared)

    # ------------------------------------------------------------------------------ close

    async def aclose(self) -> None:
        """Stop supervising, then close the connection; safe twice."""
        self._closing = True
        with anyio.CancelScope(shield=True):
            task = self._task
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait([task])
            held = self._held
            if held is not None:
                with contextlib.suppress(Exception):
                    await held.aclose()
