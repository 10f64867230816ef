"""What ``serve`` runs on: the upstream tools, the store, the gate and the rules, opened together.

Opening order (proxy-and-mcp-module §2.12): the database file check and the reach check
(done by ``serve.command`` before anything starts, which then starts the stdio servers'
processes: decision 0007), then every upstream connected (adopting those processes) and
loaded while the store opens and migrates, then the database file check again.

This module is imported in a worker thread (``session._import_runtime``), so the event loop
answers ``initialize`` meanwhile. It imports only what connecting needs; the gate, the rules
across calls, the status tool and jsonschema (~130 ms of imports) are imported by
``open_runtime`` in a worker thread while the upstreams connect (bench/RESULTS.md: the
``tools/list`` gap over the upstream's own start).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.config import READ_ONLY, Config, ConfigError, check_database_file
from agentrt_proxy.mcp import CallContext, JsonRpcError
from agentrt_proxy.mcp.modern import MODERN_VERSION
from agentrt_proxy.mcp.spawn import kill_unadopted
from agentrt_proxy.mcp.tasks_wire import declares_extension
from agentrt_proxy.proxy import _answers as answers
from agentrt_proxy.proxy._host_link import HostLink
from agentrt_proxy.proxy._ticker import REAL_TICKER, Ticker
from agentrt_proxy.store import Store, StoreError
from agentrt_proxy.text import model_text, operator_text
from agentrt_proxy.text.cli_text import program_invocation, review_command
from agentrt_proxy.upstream import OpenError, OpenServers, Supervision, annotations_for, open_servers
from agentrt_proxy.upstream.notes import LOG_METHOD, TOOLS_CHANGED_METHOD, ServerNotes

if TYPE_CHECKING:
    from agentrt_proxy.canonical.clock import Clock


class Runtime:
    def __init__(
        self,
        config: Config,
        opened: OpenServers,
        store: Store,
        write_stderr: Callable[[str], Any],
        shutting_down: anyio.Event,
        *,
        host: HostLink,
        clock: Clock | None = None,
        hold_poll: float | None = None,
        ticker: Ticker = REAL_TICKER,
    ) -> None:
        # Imported by open_runtime's worker thread while the upstreams connect; here only looked up.
        from agentrt_proxy.gate import Gate, OfferedTool, ProxyPolicy, WallClock
        from agentrt_proxy.proxy._calls import CallRules
        from agentrt_proxy.proxy._parts import CallParts, CallSettings, OperatorLog
        from agentrt_proxy.proxy._status import StatusReader

        self.config = config
        self.host = host  # notifications to the host (relayed from the upstreams)
        self.notes = ServerNotes(host, write_stderr)
        self.notes.on_tools_changed = self._tools_changed  # listed again at once (decision 0018)
        opened.relay(self.notes)
        self.opened = opened
        self._relists: set[asyncio.Task[Any]] = set()
        self.store = store
        self.tools = opened.by_name()
        offered = {
            t.name: OfferedTool(t.name, t.server, t.remote, t.side_effect, t.outcome, dict(t.fixed))
            for t in opened.tools
        }
        self.policy = ProxyPolicy.from_config(config, offered)
        clock = clock or WallClock()
        from agentrt_proxy.config.budget_fields import unpriced
        from agentrt_proxy.proxy._guarded import Guarded, UntrustedSource

        for entry in unpriced(config.servers, config.budgets):  # loud, at the start of every process
            write_stderr(operator_text.unpriced_budget(*entry))
        untrusted = UntrustedSource.from_config(config)
        self.untrusted = untrusted
        self.notes.on_relayed = lambda server: untrusted.returned(server, "", via=LOG_METHOD)
        from agentrt_proxy.proxy._forwarding import Forwarding

        # The servers' sampling and elicitation, for those that opted in (``forward``).
        self.forwarding = Forwarding(config.session, store, clock, host, untrusted, write_stderr)
        for held in opened.connections:
            target = held if hasattr(held, "request_handlers") else getattr(held, "connection", None)
            if target is not None and held.server.forward:
                self.forwarding.install(held.server.name, held.server.forward, target.request_handlers)
        guarded = Guarded(self.policy.guards, store, clock, untrusted) if self.policy.guards is not None else None
        self.gate = Gate(
            store,
            self.policy,
            [t.spec for t in opened.tools],
            clock=clock,
            reconcile=self.policy.reconcile,
            lease_ttl=config.lease_ttl,
            lease_owner=f"agentrt-proxy:{config.session}",
            context=guarded.context if guarded is not None else None,
        )
        log = OperatorLog(write_stderr, program_invocation(), str(config.database))
        settings = CallSettings.from_config(config, hold_poll)
        parts = CallParts(store, self.gate, self.policy, self.tools, clock, settings, log, guarded, untrusted)
        self.rules = CallRules(parts, shutting_down)
        self.status = StatusReader(store, config.session, config.grant_ttl, self._is_known_answer)
        self.status.quoted = self._quoted
        self.clock = clock
        from agentrt_proxy.proxy._passthrough import PassthroughHandler

        # Resources, prompts and completion of the servers that opted in (proxy/_passthrough).
        self.passthrough = PassthroughHandler(
            config, self._connection_of, store, clock, host, write_stderr, untrusted
        )
        self.listed = self.host_tools()  # what tools/list answers; renewed by offered_changed
        from agentrt_proxy.proxy._tasks import TaskBook

        # Calls answered as MCP tasks (docs/decisions/0020); driven by ``tasks.run``, started by
        # the session once the runtime is open.
        self.tasks = TaskBook(
            store, self.tools, self._call_tool, session=config.session, wall=self.gate.wall, clock=clock,
            ttl_ns=config.task_ttl, lease_ns=config.lease_ttl, shutting_down=shutting_down, host=host,
            poll=settings.hold_poll, ticker=ticker,
        )
        self.tasks.untrusted = untrusted

    def _connection_of(self, server: str) -> Any:
        """The server's live wire connection, or None (a held connection wraps the wire's)."""
        for held in self.opened.connections:
            entry = getattr(held, "server", None)
            if getattr(entry, "name", None) == server:
                return getattr(held, "connection", held)
        return None

    def _tools_changed(self, server: str) -> None:
        """A server's ``notifications/tools/list_changed``: list it again now (not in the wire's
        reader, which must not wait); the supervisor withholds what no longer matches its pin."""
        for supervisor in self.opened.connections:
            if supervisor.name == server:
                task = asyncio.get_running_loop().create_task(supervisor.relist())
                self._relists.add(task)
                task.add_done_callback(self._relists.discard)

    def offered_changed(self) -> None:
        """What the host is offered changed (a tool withheld or back on its pin): list it anew and
        tell the host, whose next ``tools/list`` omits the withheld tools."""
        self.listed = self.host_tools()
        task = asyncio.get_running_loop().create_task(self.host.notify(TOOLS_CHANGED_METHOD))
        self._relists.add(task)
        task.add_done_callback(self._relists.discard)

    def _quoted(self, tool_name: str, run_id: str) -> None:
        """The status tool's answer quotes what ``tool_name``'s server answered in ``run_id``."""
        tool = self.tools.get(tool_name)
        if tool is not None:
            self.untrusted.returned(tool.server, tool_name, run_id, via="gate_status")

    def _is_known_answer(self, tool_name: str, text: str) -> bool:
        tool = self.tools.get(tool_name)
        return tool is not None and bool(tool.known_answer.match(text))

    def host_tools(self) -> list[dict[str, Any]]:
        """The tools as the host lists them: the operator's name, description and restricted
        schema; the server's title, icons and output schema; the proxy's own annotations, from
        the operator's classification (``upstream._display``)."""
        listed = []
        withheld = {(s.name, remote) for s in self.opened.connections for remote in s.withheld()}
        for t in self.opened.tools:
            if (t.server, t.remote) in withheld:
                continue  # no longer matches its pin: not offered until an operator pins it again
            entry: dict[str, Any] = {"name": t.name, **t.display.fields()}
            entry["description"] = t.description
            entry["inputSchema"] = Raw(t.schema_text)
            if t.output_schema is not None and self._declares_output_schema(t):
                entry["outputSchema"] = Raw(t.output_schema)
            entry["annotations"] = annotations_for(t.side_effect, t.display.hints)
            listed.append(entry)
        listed.append(
            {
                "name": self.config.status_tool,
                "description": model_text.STATUS_DESCRIPTION,
                "inputSchema": Raw(model_text.STATUS_SCHEMA_TEXT),
                "annotations": annotations_for(READ_ONLY) | {"idempotentHint": True, "openWorldHint": False},
            }
        )
        return listed

    async def call(self, name: str, arguments_text: str | None, ctx: CallContext) -> dict[str, Any]:
        if name == self.config.status_tool:
            if ctx.task is not None:
                return await self.tasks.create_2025(
                    None, arguments_text, lambda: anyio.to_thread.run_sync(self._status, arguments_text))
            return await anyio.to_thread.run_sync(self._status, arguments_text)
        tool = self.tools.get(name)
        if tool is None:
            raise JsonRpcError(-32602, f"unknown tool: {name}")
        if ctx.task is not None:  # 2025-11-25: the host asked for a task
            return await self.tasks.create_2025(tool, arguments_text)
        when_pending = None
        if ctx.protocol_version == MODERN_VERSION and declares_extension(ctx.meta):
            when_pending = self.tasks.when_pending_extension(tool, arguments_text)
        return await self._call_tool(tool, arguments_text, ctx, when_pending)

    async def _call_tool(self, tool: Any, arguments_text: str | None, ctx: CallContext,
                         when_pending: Any = None) -> dict[str, Any]:
        """A call through the rules; ``when_pending`` as ``CallRules.handle`` takes it."""
        result = await self.rules.handle(tool, arguments_text, ctx, when_pending)
        if not self._declares_output_schema(tool) or result.get("resultType") == "task":
            return result
        return answers.for_output_schema(result)

    def _declares_output_schema(self, tool: Any) -> bool:
        """Whether the host is shown the tool's ``outputSchema``: only when the policy simply
        allows it. A validating host refuses prose that does not match the schema unless it is
        an error, and any other tool's answers may be prose (PENDING_APPROVAL, …) that is no
        error: such a tool is offered without its schema, so those answers keep ``isError:
        false``; its structured results still pass as ``structuredContent`` (docs/hosts.md)."""
        return tool.output_schema is not None and self.policy.simply_allows(tool.name)

    def _status(self, arguments_text: str | None) -> dict[str, Any]:
        from agentrt_proxy.proxy._status import (  # imported by open_runtime
            StatusArgumentsError,
            parse_arguments,
            parse_task,
            parse_tool,
        )

        try:
            tool = parse_tool(arguments_text)
            if tool is not None:
                return answers.prose(self._budget_status(tool))
            task_id = parse_task(arguments_text)
            approval_id = parse_arguments(arguments_text) if task_id is None else None
        except StatusArgumentsError as err:
            return answers.prose(model_text.invalid(str(err)))
        try:
            now = self.clock.now_ns()
            text = self.status.task(task_id, now) if task_id is not None else self.status.answer(approval_id, now)
        except StoreError:
            return answers.prose(model_text.unavailable(model_text.STATUS_COULD_NOT_READ))
        return answers.prose(text)  # GATE_STATUS: …

    def _budget_status(self, tool: str) -> str:
        """What remains of the budgets covering ``tool``, now (the status tool given ``tool``)."""
        from agentrt_proxy.gate.guards import budget_status_lines

        guards = self.policy.guards
        lines = budget_status_lines(guards.budgets, self.store, tool, self.clock.now_ns()) if guards else []
        return model_text.status_budgets(tool, lines)

    async def close(self) -> None:
        for task in list(self._relists):
            task.cancel()
        await self.notes.aclose()
        await self.rules.executing.late.aclose()
        await self.opened.aclose()
        await anyio.to_thread.run_sync(self.store.close)


async def open_runtime(
    config: Config,
    write_stderr: Callable[[str], Any],
    shutting_down: anyio.Event,
    *,
    host: HostLink | None = None,
    clock: Clock | None = None,
    hold_poll: float | None = None,
    supervision: Supervision | None = None,
    ticker: Ticker = REAL_TICKER,
) -> Runtime:
    """Connect every upstream, open the store and import the rules, concurrently; then the runtime.

    Why this order (the cold start, bench/RESULTS.md): an upstream's own start is the
    longest wait, so the upstreams are connected first, and the rules across calls and the
    status tool are imported in a worker thread meanwhile, while the store opens alongside.

    A server that does not answer is served anyway, from its manifest, and started again in the
    background, as is one that goes down later (``supervision``: the backoff; its lines go to
    ``write_stderr``). ``ticker`` paces the tasks' waits: real time, but in a test of its own.
    """
    opened: OpenServers | None = None
    store: Store | None = None
    failure: BaseException | None = None

    def import_heavy() -> None:
        # The gate, the rules and the status tool (and through them jsonschema), imported here in a
        # worker thread while the upstreams connect; jsonschema first, one thread at a time.
        from agentrt_proxy.upstream.checks import load_jsonschema

        load_jsonschema()
        from agentrt_proxy import gate  # noqa: F401
        from agentrt_proxy.proxy import _calls as calls  # noqa: F401

    async def open_upstreams() -> None:
        nonlocal opened, failure
        try:
            opened = await open_servers(config, keep_down=True)
        except OpenError as err:
            for report in err.reports:
                for line in report.lines():
                    write_stderr(operator_text.operator_line(line))
            failure = err
        finally:
            kill_unadopted()  # a server started early (0007) that no transport took: not left running

    async def open_store() -> None:
        nonlocal store, failure
        try:
            store = await anyio.to_thread.run_sync(Store.open, str(config.database))
            check_database_file(config.database)
        except (StoreError, ConfigError, OSError) as err:
            failure = failure or err

    async def import_gate() -> None:
        nonlocal failure
        try:
            await anyio.to_thread.run_sync(import_heavy)
        except Exception as err:
            failure = failure or err

    async with anyio.create_task_group() as tg:
        tg.start_soon(open_upstreams)  # first: it spawns the upstream processes
        tg.start_soon(open_store)
        tg.start_soon(import_gate)
    if failure is not None or opened is None or store is None:
        if opened is not None:
            await opened.aclose()
        if store is not None:
            store.close()
        raise ConfigError(str(failure) if failure is not None else operator_text.COULD_NOT_OPEN)
    for report in opened.reports:
        for line in report.lines():
            write_stderr(operator_text.operator_line(line))
    runtime = Runtime(
        config, opened, store, write_stderr, shutting_down, host=host or HostLink(), clock=clock, hold_poll=hold_poll,
        ticker=ticker,
    )
    review = review_command(str(config.path))
    from agentrt_proxy.proxy._withheld_rows import withheld_recorder

    opened.supervise(
        dataclasses.replace(
            supervision or Supervision(), report=write_stderr, review_command=review,
            offered_changed=runtime.offered_changed, record=withheld_recorder(store, config.session),
        )
    )  # fmt: skip
    return runtime
