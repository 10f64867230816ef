"""What the host is shown of a tool beside its name, description and input schema: the
server's title, icons and output schema (in a shape every host accepts), and the proxy's own
annotations from the operator's class (decision 0015)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agentrt_proxy.config import SIDE_EFFECTS
from agentrt_proxy.upstream import ToolDisplay, annotations_for, decide, display_of
from agentrt_proxy.upstream.checks import prepare
from tests.upstream.test_load_checks import READ, WRITE, fs_listing, fs_server, pin, run_decide

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740993}}, "required": ["n"]}


@pytest.mark.parametrize(
    ("listed", "shown"),
    [
        ({}, ToolDisplay()),
        ({"title": "Read File"}, ToolDisplay(title="Read File")),
        ({"annotations": {"title": "Read"}}, ToolDisplay(title="Read")),  # display precedence: title, then this
        ({"title": "Read File", "annotations": {"title": "Read"}}, ToolDisplay(title="Read File")),
        ({"title": 7}, ToolDisplay()),
        (
            {"icons": [{"src": "https://x/a.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}]},
            ToolDisplay(
                icons=({"src": "https://x/a.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"},)
            ),
        ),
        # Only what a strict host accepts: a bad field is left out, a bad icon dropped, never repaired.
        (
            {"icons": [{"src": "a.svg", "theme": "sepia", "sizes": [48], "extra": 1}, {"src": 3}, "x", {"src": ""}]},
            ToolDisplay(icons=({"src": "a.svg"},)),
        ),
        ({"icons": "a.png"}, ToolDisplay()),
        (
            {"outputSchema": SCHEMA},
            ToolDisplay(output_schema=json.dumps(SCHEMA, separators=(",", ":"), sort_keys=True)),
        ),
        ({"outputSchema": {"type": "array"}}, ToolDisplay()),  # revisions up to 2025-11-25: type "object"
        ({"outputSchema": [1]}, ToolDisplay()),
        ({"outputSchema": {"type": "object", "maximum": float("inf")}}, ToolDisplay()),  # 1e400 off the wire
    ],
)
def test_the_hosts_view_of_a_listed_tool(listed: dict[str, Any], shown: ToolDisplay) -> None:
    assert display_of({"name": "read_file", **listed}) == shown


def test_icons_are_bounded() -> None:
    shown = display_of({"icons": [{"src": f"i{n}.png"} for n in range(100)]})
    assert shown.icons is not None and len(shown.icons) == 16


@pytest.mark.parametrize("side_effect", SIDE_EFFECTS)
def test_without_the_servers_hints_the_annotations_are_the_class_and_the_specifications_defaults(
    side_effect: str,
) -> None:
    assert annotations_for(side_effect) == {
        "readOnlyHint": side_effect == "read_only",
        "destructiveHint": side_effect == "destructive",
        "idempotentHint": False,
        "openWorldHint": True,
    }


@pytest.mark.parametrize(
    ("side_effect", "server_says", "shown"),
    [
        # readOnlyHint and destructiveHint are the operator's class, whatever the server claims
        ("read_only", {"readOnlyHint": False, "destructiveHint": True}, (True, False, False, True)),
        ("local_mutation", {"readOnlyHint": True}, (False, False, False, True)),
        ("destructive", {"destructiveHint": False, "readOnlyHint": True}, (False, True, False, True)),
        # idempotence: the class says nothing, so the server's own hint stands
        ("local_mutation", {"idempotentHint": True}, (False, False, True, True)),
        ("destructive", {"idempotentHint": True}, (False, True, True, True)),
        ("read_only", {"idempotentHint": False}, (True, False, False, True)),
        # an open world: the server's, except that remote_mutation says it reaches one
        ("read_only", {"openWorldHint": False}, (True, False, False, False)),
        ("local_mutation", {"openWorldHint": False, "idempotentHint": True}, (False, False, True, False)),
        ("remote_mutation", {"openWorldHint": False}, (False, False, False, True)),
        ("destructive", {"openWorldHint": False}, (False, True, False, False)),
        # a hint that is not a boolean is no hint
        ("read_only", {"openWorldHint": "no", "idempotentHint": 1}, (True, False, False, True)),
        ("read_only", "not an object", (True, False, False, True)),
    ],
)
def test_the_servers_idempotent_and_open_world_hints_stand_where_the_class_says_nothing(
    side_effect: str, server_says: Any, shown: tuple[bool, bool, bool, bool]
) -> None:
    hints = display_of({"annotations": server_says}).hints
    names = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
    assert annotations_for(side_effect, hints) == dict(zip(names, shown, strict=True))


def test_a_registered_tool_carries_the_live_listings_display_whether_or_not_its_checks_were_prepared() -> None:
    shown = display_of({"title": "Read File", "outputSchema": SCHEMA, "icons": [{"src": "r.png"}]})
    listing = [replace(tool, display=shown) if tool.name == "read_file" else tool for tool in fs_listing()]
    # Icons are not pinned: the pin was taken without them and the tool is still offered with them.
    pinned = [replace(tool, display=replace(shown, icons=None)) if tool.name == "read_file" else tool
              for tool in fs_listing()]  # fmt: skip
    loaded, _ = run_decide({"read_file": READ, "write_file": WRITE}, listing, pin(pinned))
    by_name = {tool.remote: tool for tool in loaded}
    assert by_name["read_file"].display == shown and by_name["read_file"].output_schema == shown.output_schema
    assert by_name["write_file"].display == ToolDisplay()
    server = fs_server({"read_file": READ, "write_file": WRITE})
    manifest = pin(pinned)
    early = prepare(server, manifest, repeat_window=0)
    loaded, _ = decide(server, manifest, listing, repeat_window=0, prepared=early)
    assert {tool.remote: tool.display for tool in loaded}["read_file"] == shown
