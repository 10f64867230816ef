"""Resources, prompts and completion passed through to the servers that opted in (decision 0013).

A server passes its resources through with ``"resources": true`` and its prompts with
``"prompts": true``, and only when its own ``initialize`` result offers them. Lists aggregate
every such server's pages (bounded as ``tools/list`` is: ``mcp.spec``); URIs are kept and routed
to the server that listed them (``passthrough_routes``); prompts are offered under the host's
name only while they equal their pins. The server's answers to reads go back as the exact text
it sent. Nothing here records or relays: ``proxy/_passthrough`` does, around these requests.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from agentrt_proxy.canonical.durations import SECOND
from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.config import ServerConfig
from agentrt_proxy.mcp import MAX_TOOL_PAGES, MAX_TOOLS, JsonRpcError
from agentrt_proxy.mcp.errors import TransportError
from agentrt_proxy.mcp.jsonrpc import ErrorResponse, Response
from agentrt_proxy.mcp.spans import SpanError, find_span, iter_elements
from agentrt_proxy.text import load_text, model_text
from agentrt_proxy.text.escaping import go_quote
from agentrt_proxy.upstream._passthrough_routes import OfferedPrompt, PromptDecision, Routes, decide_prompts
from agentrt_proxy.upstream.pins import PinnedPrompt

__all__ = ["PASSTHROUGH_TIMEOUT", "Passthrough", "ReadAnswer", "list_live_prompts"]

PASSTHROUGH_TIMEOUT = 30 * SECOND  # a server's own default_timeout, when set, bounds its requests instead
INVALID_PARAMS, METHOD_NOT_FOUND, INTERNAL_ERROR = -32602, -32601, -32603

ConnectionOf = Callable[[str], Any]  # a server's name -> its live mcp Connection, or None while it is down


@dataclass(frozen=True)
class ReadAnswer:
    """A server's answer to a read (``resources/read``, ``prompts/get``): the result as its exact
    text, or its error; ``size`` is the answer's length in bytes as it came."""

    server: str
    target: str  # the URI, or the prompt's name at the server
    result: Raw | None
    error: JsonRpcError | None
    size: int


async def _pages(connection: Any, method: str, key: str, timeout_ns: int) -> list[tuple[Any, str]]:
    """Every page of a list (``resources/list``…): each item decoded and as its exact text."""
    items: list[tuple[Any, str]] = []
    cursors: set[str] = set()
    cursor: str | None = None
    for _page in range(MAX_TOOL_PAGES):
        answer = await connection.request(method, {"cursor": cursor} if cursor is not None else None, timeout_ns)
        if isinstance(answer, ErrorResponse):
            raise TransportError(
                load_text.LIST_ANSWERED_ERROR.format(method=method, code=answer.code, message=answer.message)
            )
        result = answer.result if isinstance(answer.result, dict) else {}
        listed = result.get(key)
        if not isinstance(listed, list):
            raise TransportError(load_text.LIST_NO_ARRAY.format(method=method, key=key))
        try:
            span = find_span(answer.text, ["result", key])
            assert span is not None
            texts = [_one_line(answer.text[a:b]) for a, b in iter_elements(answer.text, span[0])]
        except SpanError as exc:
            raise TransportError(load_text.LIST_RAW_UNREADABLE.format(method=method, error=exc)) from exc
        items.extend(zip(listed, texts, strict=True))
        if len(items) > MAX_TOOLS:
            raise TransportError(load_text.LIST_TOO_MANY_ITEMS.format(limit=MAX_TOOLS, method=method))
        nxt = result.get("nextCursor")
        if not isinstance(nxt, str) or nxt == "":
            return items
        if nxt in cursors:
            raise TransportError(load_text.LIST_CURSOR_REPEATS.format(q_cursor=go_quote(nxt)))
        cursors.add(nxt)
        cursor = nxt
    raise TransportError(load_text.LIST_TOO_MANY_PAGES.format(limit=MAX_TOOL_PAGES, method=method))


async def list_live_prompts(connection: Any, timeout_ns: int) -> list[Any]:
    """Every prompt a server lists now, decoded (``pin`` and ``check`` read them so)."""
    return [decoded for decoded, _text in await _pages(connection, "prompts/list", "prompts", timeout_ns)]


async def list_live_resources(connection: Any, timeout_ns: int) -> list[Any]:
    """Every resource and resource template a server lists now, decoded (``scan`` reads their
    descriptions). A server without templates answers their list with an error: none, then."""
    listed = [decoded for decoded, _text in await _pages(connection, "resources/list", "resources", timeout_ns)]
    try:
        pages = await _pages(connection, "resources/templates/list", "resourceTemplates", timeout_ns)
    except TransportError:
        pages = []
    return listed + [decoded for decoded, _text in pages]


def _one_line(text: str) -> str:
    # A line break in decoded JSON is whitespace between tokens (inside a string it is escaped),
    # and the host's stdio framing is one message a line: a pretty-printed HTTP answer is joined.
    return text.replace("\r", " ").replace("\n", " ") if "\n" in text or "\r" in text else text


def _result_text(answer: Response) -> str:
    span = find_span(answer.text, ["result"])
    return "{}" if span is None else _one_line(answer.text[span[0] : span[1]])


class Passthrough:
    """The passed-through requests over the live connections, and what their listings taught."""

    def __init__(
        self,
        servers: Sequence[ServerConfig],
        pins: Mapping[str, Mapping[str, PinnedPrompt] | None],
        connection_of: ConnectionOf,
        warn: Callable[[str], Any],
    ) -> None:
        self.servers = [s for s in servers if s.resources or s.prompts]
        self._by_name = {s.name: s for s in self.servers}
        self._pins = pins
        self._connection_of = connection_of
        self._warn = warn
        self.routes = Routes()
        self.prompts: dict[str, OfferedPrompt] = {}  # host name -> offered prompt
        self.decisions: dict[str, PromptDecision] = {}  # server -> its prompts' last decision
        self._warned: set[tuple[str, str, str]] = set()
        # Called with (server, method) as text that server chose is about to reach the host (a
        # listing's descriptions, an answer, an error's message); proxy/_passthrough taints with it.
        # A read or a prompt is tainted there instead, with the run that records it.
        self.on_server_text: Callable[[str, str], object] = lambda _server, _method: None

    @property
    def configured(self) -> bool:
        return bool(self.servers)

    # ---------------------------------------------------------------- what is offered

    def _live(self, server: ServerConfig) -> Any:
        connection = self._connection_of(server.name)
        return connection if connection is not None and getattr(connection, "alive", True) else None

    def _offers(self, server: ServerConfig, kind: str) -> dict[str, Any] | None:
        """The server's capability ``kind`` when it opted in and offers it; else None."""
        if (kind == "resources" and not server.resources) or (kind == "prompts" and not server.prompts):
            return None
        connection = self._live(server)
        capabilities = getattr(connection, "capabilities", None) if connection is not None else None
        offered = capabilities.get(kind) if isinstance(capabilities, dict) else None
        return offered if isinstance(offered, dict) else None

    def _serving(self, kind: str) -> list[ServerConfig]:
        return [s for s in self.servers if self._offers(s, kind) is not None]

    def capabilities(self) -> dict[str, Any]:
        """What the proxy declares at ``initialize``: only what some opted-in server offers."""
        out: dict[str, Any] = {}
        resources = [self._offers(s, "resources") for s in self._serving("resources")]
        if resources:
            out["resources"] = {
                "subscribe": any(r.get("subscribe") is True for r in resources if r is not None),
                "listChanged": any(r.get("listChanged") is True for r in resources if r is not None),
            }
        prompts = [self._offers(s, "prompts") for s in self._serving("prompts")]
        if prompts:
            out["prompts"] = {"listChanged": any(p.get("listChanged") is True for p in prompts if p is not None)}
        if self._completing():
            out["completions"] = {}
        return out

    def _completing(self) -> list[ServerConfig]:
        found = []
        for server in self.servers:
            connection = self._live(server)
            capabilities = getattr(connection, "capabilities", None) if connection is not None else None
            if isinstance(capabilities, dict) and isinstance(capabilities.get("completions"), dict):
                found.append(server)
        return found

    @staticmethod
    def timeout(server: ServerConfig) -> int:
        return server.default_timeout or PASSTHROUGH_TIMEOUT

    def _connection(self, server: ServerConfig) -> Any:
        connection = self._live(server)
        if connection is None:
            raise JsonRpcError(
                INTERNAL_ERROR, model_text.passthrough_failed(server.name, model_text.PASSTHROUGH_NOT_CONNECTED)
            )
        return connection

    # ---------------------------------------------------------------------- resources

    async def list_resources(self, *, for_host: bool = True) -> dict[str, Any]:
        """Every server's resources; ``for_host``: the host is given them (not a routing look)."""
        listed: list[Raw] = []
        for server in self._serving("resources"):
            items = await self._list(server, "resources/list", "resources")
            if items is None:
                continue
            if items and for_host:
                self.on_server_text(server.name, "resources/list")
            self.routes.listed(
                server.name, [d["uri"] for d, _ in items if isinstance(d, dict) and _is_str(d.get("uri"))]
            )
            listed.extend(Raw(text) for _d, text in items)
        return {"resources": listed}

    async def list_templates(self, *, for_host: bool = True) -> dict[str, Any]:
        listed: list[Raw] = []
        for server in self._serving("resources"):
            items = await self._list(server, "resources/templates/list", "resourceTemplates")
            if items is None:
                continue
            if items and for_host:
                self.on_server_text(server.name, "resources/templates/list")
            self.routes.listed_templates(
                server.name,
                [d["uriTemplate"] for d, _ in items if isinstance(d, dict) and _is_str(d.get("uriTemplate"))],
            )
            listed.extend(Raw(text) for _d, text in items)
        return {"resourceTemplates": listed}

    async def _list(self, server: ServerConfig, method: str, key: str) -> list[tuple[Any, str]] | None:
        """One server's whole list, or None (said once on stderr) when it cannot be had: the
        other servers' lists still answer."""
        try:
            return await _pages(self._connection(server), method, key, self.timeout(server))
        except (TransportError, JsonRpcError) as err:
            self._warn_once(server.name, method, str(err))
            return None

    async def _route(self, uri: str) -> ServerConfig:
        if not self.routes.known(uri):  # the host may read before it lists: learn the lists first
            await self.list_resources(for_host=False)
            await self.list_templates(for_host=False)
        server = self._by_name[self.routes.route(uri)]
        if self._offers(server, "resources") is None:
            raise JsonRpcError(INVALID_PARAMS, model_text.passthrough_not_offered(server.name, "resources"))
        return server

    async def read(self, params: dict[str, Any]) -> ReadAnswer:
        uri = params.get("uri")
        if not _is_str(uri):
            raise JsonRpcError(INVALID_PARAMS, model_text.PASSTHROUGH_NEEDS_URI)
        server = await self._route(uri)
        return await self._answer(server, uri, "resources/read", params)

    async def subscription(self, method: str, params: dict[str, Any]) -> Raw | None:
        uri = params.get("uri")
        if not _is_str(uri):
            raise JsonRpcError(INVALID_PARAMS, model_text.PASSTHROUGH_NEEDS_URI)
        server = await self._route(uri)
        offered = self._offers(server, "resources") or {}
        if offered.get("subscribe") is not True:
            raise JsonRpcError(METHOD_NOT_FOUND, model_text.passthrough_not_offered(server.name, "subscriptions"))
        answer = await self._answer(server, uri, method, params)
        if answer.error is not None:
            raise answer.error
        return answer.result

    # ------------------------------------------------------------------------ prompts

    async def list_prompts(self) -> dict[str, Any]:
        offered: dict[str, OfferedPrompt] = {}
        for server in self._serving("prompts"):
            items = await self._list(server, "prompts/list", "prompts")
            if items is None:
                continue
            decision = decide_prompts(server, self._pins.get(server.name), [d for d, _ in items])
            self.decisions[server.name] = decision
            for remote, why in decision.withheld:
                self._warn_once(server.name, f"prompt {go_quote(remote)}", f"withheld: {why}")
            for prompt in decision.offered:
                offered.setdefault(prompt.host_name, prompt)
        self.prompts = offered
        return {"prompts": [prompt.listing() for prompt in offered.values()]}

    async def _prompt(self, name: str) -> OfferedPrompt:
        prompt = self.prompts.get(name)
        if prompt is None:  # not listed yet, or its server's list changed since: list again
            await self.list_prompts()
            prompt = self.prompts.get(name)
        if prompt is None:
            raise JsonRpcError(INVALID_PARAMS, model_text.passthrough_unknown_prompt(name))
        return prompt

    async def get_prompt(self, params: dict[str, Any]) -> tuple[OfferedPrompt, ReadAnswer]:
        name = params.get("name")
        if not _is_str(name):
            raise JsonRpcError(INVALID_PARAMS, model_text.PASSTHROUGH_NEEDS_NAME)
        prompt = await self._prompt(name)
        server = self._by_name[prompt.server]
        return prompt, await self._answer(server, prompt.remote, "prompts/get", {**params, "name": prompt.remote})

    def forget_prompts(self, server: str) -> None:
        """The server's prompts changed: nothing of its last listing is offered until listed again."""
        self.prompts = {name: p for name, p in self.prompts.items() if p.server != server}

    # --------------------------------------------------------------------- completion

    async def complete(self, params: dict[str, Any]) -> Raw | None:
        ref = params.get("ref")
        if not isinstance(ref, dict):
            raise JsonRpcError(INVALID_PARAMS, model_text.PASSTHROUGH_NEEDS_REF)
        sent = copy.deepcopy(params)
        if ref.get("type") == "ref/prompt" and _is_str(ref.get("name")):
            prompt = await self._prompt(ref["name"])
            server = self._by_name[prompt.server]
            sent["ref"]["name"] = prompt.remote
            target = prompt.remote
        elif ref.get("type") == "ref/resource" and _is_str(ref.get("uri")):
            target = ref["uri"]
            owner = self.routes.route_template(target)
            if owner is None:
                await self.list_templates(for_host=False)
                owner = self.routes.route_template(target)
            server = self._by_name[owner] if owner is not None else await self._route(target)
        else:
            raise JsonRpcError(INVALID_PARAMS, model_text.PASSTHROUGH_NEEDS_REF)
        if server not in self._completing():
            raise JsonRpcError(METHOD_NOT_FOUND, model_text.passthrough_not_offered(server.name, "completions"))
        answer = await self._answer(server, target, "completion/complete", sent)
        if answer.error is not None:
            raise answer.error
        return answer.result

    # ----------------------------------------------------------------------- requests

    async def _answer(self, server: ServerConfig, target: str, method: str, params: dict[str, Any]) -> ReadAnswer:
        connection = self._connection(server)
        recorded = method in ("resources/read", "prompts/get")  # tainted as it is recorded
        try:
            answer = await connection.request(method, params, self.timeout(server))
        except TransportError as err:
            self.on_server_text(server.name, method)  # its detail may quote the server (an HTTP body)
            raise JsonRpcError(INTERNAL_ERROR, model_text.passthrough_failed(server.name, str(err))) from None
        if not recorded:
            self.on_server_text(server.name, method)
        size = len(answer.text.encode("utf-8"))
        if isinstance(answer, ErrorResponse):
            error = JsonRpcError(answer.code, model_text.passthrough_error(answer.message), answer.data)
            return ReadAnswer(server.name, target, None, error, size)
        text = _result_text(answer)
        return ReadAnswer(server.name, target, Raw(text), None, len(text.encode("utf-8")))

    def _warn_once(self, server: str, what: str, why: str) -> None:
        key = (server, what, why)
        if key not in self._warned:
            self._warned.add(key)
            self._warn(f"server {go_quote(server)}: {what}: {why}")


def _is_str(value: Any) -> TypeGuard[str]:
    return isinstance(value, str)
