"""The 2026-07-28 revision's request and result shaping (``mcp/modern.py``), row by row."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.mcp import modern

V = modern.PROTOCOL_VERSION_KEY
C = modern.CLIENT_CAPABILITIES_KEY
INFO = {"name": "gated-tools", "version": "1"}


def env(**meta: Any) -> dict[str, Any]:
    return {"_meta": meta}


ENVELOPE_ROWS = [
    # (what the request carries, the code refused with or None, what the error names)
    ("no params at all", None, -32602, "params._meta"),
    ("params without _meta", {"name": "x"}, -32602, "params._meta"),
    ("_meta not an object", {"_meta": "2026-07-28"}, -32602, "params._meta"),
    ("no protocol version", env(**{C: {}}), -32602, V),
    ("no client capabilities", env(**{V: "2026-07-28"}), -32602, C),
    ("neither key", env(progressToken=1), -32602, f"{V}, {C}"),
    ("a version that is not a string", env(**{V: 20260728, C: {}}), -32602, "must be a string"),
    ("capabilities that are not an object", env(**{V: "2026-07-28", C: []}), -32602, "must be an object"),
    ("a handshake version in the envelope", env(**{V: "2025-11-25", C: {}}), -32022, "2025-11-25"),
    ("a version from the future", env(**{V: "2099-01-01", C: {}}), -32022, "2099-01-01"),
]


@pytest.mark.parametrize(("case", "params", "code", "named"), ENVELOPE_ROWS, ids=[r[0] for r in ENVELOPE_ROWS])
def test_a_request_without_a_good_envelope_is_refused_with_the_revisions_code(
    case: str, params: Any, code: int, named: str
) -> None:
    refused = modern.read_envelope(params)
    assert isinstance(refused, modern.Rejection), case
    assert refused.code == code
    assert named in refused.message
    if code == modern.UNSUPPORTED_PROTOCOL_VERSION:
        assert refused.data == {"supported": ["2026-07-28"], "requested": params["_meta"][V]}


def test_a_good_envelope_is_read_with_its_capabilities_and_client() -> None:
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    read = modern.read_envelope(env(**{V: "2026-07-28", C: caps, modern.CLIENT_INFO_KEY: {"name": "h"}}))
    assert isinstance(read, modern.Envelope)
    assert (read.version, dict(read.capabilities), read.client_info) == ("2026-07-28", caps, {"name": "h"})


ERA_ROWS = [
    (None, False),
    ({}, False),
    ({"_meta": {"progressToken": 3}}, False),  # a handshake host's _meta
    ({"_meta": {V: "2026-07-28"}}, True),  # claims the era, even if the rest is missing
    ({"_meta": {V: "1999-01-01", C: {}}}, True),
]


@pytest.mark.parametrize(("params", "claims"), ERA_ROWS)
def test_only_a_meta_naming_a_protocol_version_claims_the_modern_era(params: Any, claims: bool) -> None:
    assert modern.has_envelope(params) is claims


def test_a_missing_extension_is_refused_with_the_capability_it_needs() -> None:
    bare = modern.read_envelope(env(**{V: "2026-07-28", C: {}}))
    declared = modern.read_envelope(env(**{V: "2026-07-28", C: {"extensions": {"x/tasks": {}}}}))
    assert isinstance(bare, modern.Envelope) and isinstance(declared, modern.Envelope)
    refused = modern.missing_capability(bare, "x/tasks")
    assert refused is not None and refused.code == -32021
    assert refused.data == {"requiredCapabilities": {"extensions": {"x/tasks": {}}}}
    assert modern.missing_capability(declared, "x/tasks") is None


def test_initialize_on_a_modern_session_is_refused_naming_what_is_served() -> None:
    refused = modern.initialize_refused({"protocolVersion": "2025-11-25"})
    assert refused.code == -32022
    assert refused.data == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    assert modern.initialize_refused(None).data == {"supported": ["2026-07-28"]}


SHAPE_ROWS = [
    # (method, result, the fields it must carry after shaping)
    ("tools/list", {"tools": []}, {"resultType": "complete", "ttlMs": 60_000, "cacheScope": "private"}),
    ("server/discover", {"supportedVersions": []}, {"resultType": "complete", "ttlMs": 60_000}),
    ("prompts/list", {"prompts": []}, {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}),
    ("resources/list", {"resources": []}, {"ttlMs": 0, "cacheScope": "private"}),
    ("resources/templates/list", {"resourceTemplates": []}, {"ttlMs": 0, "cacheScope": "private"}),
    ("resources/read", {"contents": []}, {"ttlMs": 0, "cacheScope": "private"}),
    ("tools/call", {"content": [], "isError": False}, {"resultType": "complete"}),
    ("tools/call", {"content": [], "resultType": "task"}, {"resultType": "task"}),  # the application's own
    ("prompts/get", {"messages": []}, {"resultType": "complete"}),
]


@pytest.mark.parametrize(("method", "result", "carries"), SHAPE_ROWS)
def test_every_result_carries_its_type_and_the_cacheable_ones_their_hints(
    method: str, result: dict[str, Any], carries: dict[str, Any]
) -> None:
    shaped = modern.shape_result(method, result, INFO)
    assert isinstance(shaped, dict)
    assert {key: shaped[key] for key in carries} == carries
    assert ("ttlMs" in shaped) is (method in modern.CACHE_HINTS)
    assert shaped["_meta"][modern.SERVER_INFO_KEY] == INFO
    assert "resultType" not in result or result["resultType"] == shaped["resultType"]


def test_a_servers_own_meta_is_not_rewritten() -> None:
    raw_meta = Raw('{"server/key":1}')
    shaped = modern.shape_result("tools/call", {"content": [], "_meta": raw_meta}, INFO)
    assert isinstance(shaped, dict) and shaped["_meta"] is raw_meta
    merged = modern.shape_result("tools/call", {"content": [], "_meta": {"gate/outcome": "DENIED"}}, INFO)
    assert isinstance(merged, dict)
    assert merged["_meta"] == {"gate/outcome": "DENIED", modern.SERVER_INFO_KEY: INFO}


RAW_ROWS = [
    (
        "resources/read",
        '{"contents":[{"uri":"a","text":"1.50"}]}',
        {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "contents": [{"uri": "a", "text": "1.50"}]},
    ),
    ("prompts/get", " { } ", {"resultType": "complete"}),
    (
        "completion/complete",
        '{"resultType":"complete","completion":{"values":[]}}',
        {"resultType": "complete", "completion": {"values": []}},
    ),
]


@pytest.mark.parametrize(("method", "text", "decoded"), RAW_ROWS)
def test_a_servers_own_result_text_keeps_its_bytes_and_gains_what_it_lacks(
    method: str, text: str, decoded: dict[str, Any]
) -> None:
    shaped = modern.shape_result(method, Raw(text), INFO)
    assert isinstance(shaped, Raw)
    assert json.loads(shaped) == decoded
    pairs = json.loads(shaped, object_pairs_hook=list)
    assert len(pairs) == len({key for key, _ in pairs})  # no key twice
    assert text.strip()[1:].strip()[:-1].strip() in shaped  # the server's members verbatim


def test_discover_says_versions_capabilities_instructions_and_who_answers() -> None:
    legacy = {"tools": {"listChanged": False}, "logging": {}, "resources": {"subscribe": True, "listChanged": True}}
    found = modern.discover_result(legacy, INFO, "Calls may wait for an operator.")
    assert found == {
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": False}, "resources": {"listChanged": True}},
        "instructions": "Calls may wait for an operator.",
        "resultType": "complete",
        "ttlMs": 60_000,
        "cacheScope": "private",
        "_meta": {modern.SERVER_INFO_KEY: INFO},
    }
    assert "instructions" not in modern.discover_result(legacy, INFO, None)
