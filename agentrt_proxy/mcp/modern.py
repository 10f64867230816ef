"""The 2026-07-28 revision ("modern era") toward the host: what a request must carry and
what a result must say. Pure functions; the session (``server.py``) applies them.

In the modern era there is no ``initialize``: every request carries its protocol version and
the client's capabilities in ``params._meta``, ``server/discover`` says what the server is,
every result names its ``resultType`` and the cacheable results carry ``ttlMs`` and
``cacheScope``. The facts are the revision's schema (``mcp-types`` 2.3.0 ``_v2026_07_28``
and mcp-protocol §5, §6).

-32020 (``HeaderMismatch``) compares HTTP headers with the body. The host side of this proxy
is stdio only, which has no headers, so the code is named here and never sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.mcp import _messages as M
from agentrt_proxy.mcp.spans import with_members_in_front

__all__ = [
    "CACHE_HINTS",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "HEADER_MISMATCH",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_VERSION",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "REMOVED_METHODS",
    "SERVER_INFO_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Envelope",
    "Rejection",
    "discover_result",
    "has_envelope",
    "initialize_refused",
    "missing_capability",
    "modern_capabilities",
    "read_envelope",
    "shape_result",
]

MODERN_VERSION = "2026-07-28"
MODERN_VERSIONS = (MODERN_VERSION,)  # the versions a request's ``_meta`` may name

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

INVALID_PARAMS = -32602  # a request without the envelope (the revision's basic/index)
HEADER_MISMATCH = -32020  # HTTP only: never on stdio
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# Methods the revision removed: answered -32601 in the modern era, as an unknown method is.
REMOVED_METHODS = frozenset({"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})

# ``ttlMs`` and ``cacheScope`` per cacheable method. The tool list and what discover says are
# fixed for the life of a proxy process (manifests are pinned; ``listChanged`` is false), so a
# host may keep them a minute; a restart with a new pin is then seen within that minute, and a
# call to a tool no longer served is refused by the gate, never run. What the passthrough
# lists or reads comes live from an upstream, which may change it at any moment: 0, stale at
# once. Every scope is ``private``: the list is one operator's configuration, not a public fact.
CACHE_HINTS: Mapping[str, tuple[int, str]] = {
    "server/discover": (60_000, "private"),
    "tools/list": (60_000, "private"),
    "prompts/list": (0, "private"),
    "resources/list": (0, "private"),
    "resources/templates/list": (0, "private"),
    "resources/read": (0, "private"),
}


@dataclass(frozen=True)
class Rejection:
    """A request the revision says to refuse: its JSON-RPC error."""

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True)
class Envelope:
    """What a modern request says about itself in ``params._meta``."""

    version: str
    capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


def has_envelope(params: object) -> bool:
    """Whether a request claims the modern era: its ``_meta`` names a protocol version.

    A ``server/discover`` without it is the probe of no revision (answered as today, -32601),
    and a handshake-era host's ``_meta`` never carries the key."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def read_envelope(params: object) -> Envelope | Rejection:
    """The envelope of a modern request, or why it is refused (the revision's order: the
    required keys (-32602), a version that is a string (-32602), one served (-32022))."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return Rejection(
            INVALID_PARAMS,
            M.META_NOT_OBJECT.format(version_key=PROTOCOL_VERSION_KEY, capabilities_key=CLIENT_CAPABILITIES_KEY),
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        return Rejection(INVALID_PARAMS, M.META_MISSING.format(keys=", ".join(missing)))
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        return Rejection(INVALID_PARAMS, M.META_VERSION_NOT_STRING.format(key=PROTOCOL_VERSION_KEY))
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    if not isinstance(capabilities, dict):
        return Rejection(INVALID_PARAMS, M.META_CAPABILITIES_NOT_OBJECT.format(key=CLIENT_CAPABILITIES_KEY))
    if version not in MODERN_VERSIONS:
        return Rejection(
            UNSUPPORTED_PROTOCOL_VERSION,
            M.VERSION_NOT_SERVED.format(version=version, served=", ".join(MODERN_VERSIONS)),
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )
    info = meta.get(CLIENT_INFO_KEY)
    return Envelope(version, capabilities, info if isinstance(info, dict) else None, meta)


def initialize_refused(params: object) -> Rejection:
    """``initialize`` on a session already serving the modern era (as the Python SDK's server
    answers it): -32022 naming what is served, so a dual-era client probes again."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    data: dict[str, Any] = {"supported": list(MODERN_VERSIONS)}
    if isinstance(requested, str):
        data["requested"] = requested
    return Rejection(
        UNSUPPORTED_PROTOCOL_VERSION,
        M.INITIALIZE_REFUSED.format(version=MODERN_VERSION),
        data,
    )


def missing_capability(envelope: Envelope, extension: str) -> Rejection | None:
    """-32021 when a request needs a client extension (``capabilities.extensions[name]``) the
    client did not declare; ``None`` when it did. (The tasks extension will need it.)"""
    extensions = envelope.capabilities.get("extensions")
    if isinstance(extensions, dict) and extension in extensions:
        return None
    return Rejection(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        M.CAPABILITY_NEEDED.format(extension=extension),
        {"requiredCapabilities": {"extensions": {extension: {}}}},
    )


def modern_capabilities(legacy: Mapping[str, Any]) -> dict[str, Any]:
    """The handshake era's capabilities as the modern era offers them: without ``logging``
    (deprecated, and no log message reaches a modern host unasked) and without resource
    subscriptions (removed: ``subscriptions/listen`` replaces them, and it is not served)."""
    offered: dict[str, Any] = {}
    for name, value in legacy.items():
        if name == "logging":
            continue
        if name == "resources" and isinstance(value, dict):
            value = {key: item for key, item in value.items() if key != "subscribe"}
        offered[name] = value
    return offered


def discover_result(
    capabilities: Mapping[str, Any], server_info: Mapping[str, Any], instructions: str | None
) -> dict[str, Any]:
    """The answer to ``server/discover``: versions, capabilities, instructions, server info."""
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": modern_capabilities(capabilities),
    }
    if instructions:
        result["instructions"] = instructions
    shaped = shape_result("server/discover", result, server_info)
    assert isinstance(shaped, dict)  # a dict in, a dict out
    return shaped


def shape_result(method: str, result: Mapping[str, Any] | Raw, server_info: Mapping[str, Any]) -> dict[str, Any] | Raw:
    """A result as the modern era carries it.

    ``resultType`` is ``complete`` unless the application named another (a task, later);
    cacheable results get their ``ttlMs`` and ``cacheScope`` (``CACHE_HINTS``); the server's
    identity goes in ``_meta`` unless ``_meta`` is a server's own, passed through verbatim
    (a ``Raw``: the record's bytes are not rewritten). A result that is itself a server's
    text (``resources/read``, ``prompts/get``, ``completion/complete``) keeps every byte and
    gets the fields it lacks in front."""
    if isinstance(result, Raw):
        return _shape_raw(method, result)
    shaped = dict(result)
    shaped.setdefault("resultType", "complete")
    hints = CACHE_HINTS.get(method)
    if hints is not None:
        shaped.setdefault("ttlMs", hints[0])
        shaped.setdefault("cacheScope", hints[1])
    meta = shaped.get("_meta")
    if meta is None:
        shaped["_meta"] = {SERVER_INFO_KEY: dict(server_info)}
    elif isinstance(meta, dict) and SERVER_INFO_KEY not in meta:
        shaped["_meta"] = {**meta, SERVER_INFO_KEY: dict(server_info)}
    return shaped


def _shape_raw(method: str, result: Raw) -> Raw:
    added: dict[str, Any] = {"resultType": "complete"}
    hints = CACHE_HINTS.get(method)
    if hints is not None:
        added.update(ttlMs=hints[0], cacheScope=hints[1])
    return with_members_in_front(result, added)
