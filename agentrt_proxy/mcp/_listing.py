"""A server's ``tools/list`` as the proxy reads it: each tool with the exact wire text of its input
schema (the pin hashes that text, so it is cut from the answer line, never re-encoded)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.canonical.quoting import go_quote
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp.errors import TransportError
from agentrt_proxy.mcp.jsonrpc import Response
from agentrt_proxy.mcp.spans import SpanError, find_span, iter_elements
from agentrt_proxy.mcp.spec import MAX_TOOL_PAGES, MAX_TOOLS

# One request whose error answer or failure is an exception: (method, params) -> the answer.
Roundtrip = Callable[[str, dict[str, Any] | None], Awaitable[Response]]


@dataclass(frozen=True)
class ListedTool:
    """One tool as the server lists it; ``input_schema_raw`` is the exact wire text."""

    name: str
    description: str | None
    title: str | None
    annotations: dict[str, Any] | None
    input_schema_raw: str | None
    decoded: dict[str, Any] = field(repr=False)


def listed_page(answer: Response, names: set[str]) -> list[ListedTool]:
    """One ``tools/list`` page: each tool with its input schema's exact wire text; ``names``, the
    names listed on earlier pages, grows (a name listed twice is refused)."""
    if not isinstance(answer.result, dict) or not isinstance(answer.result.get("tools"), list):
        raise TransportError(M.NO_TOOLS_ARRAY)
    text = answer.text
    try:
        span = find_span(text, ["result", "tools"])
        assert span is not None
        elements = list(iter_elements(text, span[0]))
    except SpanError as exc:
        raise TransportError(M.LISTING_UNREADABLE.format(error=exc)) from exc
    out: list[ListedTool] = []
    for (start, _end), tool in zip(elements, answer.result["tools"], strict=True):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise TransportError(M.TOOL_WITHOUT_NAME)
        name = tool["name"]
        if name in names:
            raise TransportError(M.TOOL_LISTED_TWICE.format(q_name=go_quote(name)))
        names.add(name)
        schema_span = find_span(text, ["inputSchema"], start)
        description, title, annotations = tool.get("description"), tool.get("title"), tool.get("annotations")
        out.append(
            ListedTool(
                name=name,
                description=description if isinstance(description, str) else None,
                title=title if isinstance(title, str) else None,
                annotations=annotations if isinstance(annotations, dict) else None,
                input_schema_raw=None if schema_span is None else text[schema_span[0] : schema_span[1]],
                decoded=tool,
            )
        )
    return out


async def list_every_tool(roundtrip: Roundtrip) -> list[ListedTool]:
    """Every page of ``tools/list``, followed by its cursors (a repeated cursor, more than
    ``MAX_TOOL_PAGES`` pages or ``MAX_TOOLS`` tools is refused)."""
    tools: list[ListedTool] = []
    names: set[str] = set()
    cursors: set[str] = set()
    cursor: str | None = None
    for _page in range(MAX_TOOL_PAGES):
        answer = await roundtrip("tools/list", {"cursor": cursor} if cursor is not None else None)
        tools.extend(listed_page(answer, names))
        if len(tools) > MAX_TOOLS:
            raise TransportError(M.TOO_MANY_TOOLS.format(limit=MAX_TOOLS))
        nxt = answer.result.get("nextCursor") if isinstance(answer.result, dict) else None
        if not isinstance(nxt, str) or nxt == "":
            return tools
        if nxt in cursors:
            raise TransportError(M.CURSOR_REPEATS.format(q_cursor=go_quote(nxt)))
        cursors.add(nxt)
        cursor = nxt
    raise TransportError(M.TOO_MANY_PAGES.format(limit=MAX_TOOL_PAGES))
