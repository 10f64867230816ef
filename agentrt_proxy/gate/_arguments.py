"""Validation of a decision and its arguments (runtime-core §1.8): the first reason the
decision is invalid, or "" when it is valid."""

from __future__ import annotations

from typing import Any

from agentrt_proxy.gate._model import ORIGINS, Decision
from agentrt_proxy.text.record_text import (
    ERR_ARGS_SCHEMA,
    ERR_NO_KIND,
    ERR_NO_TOOL,
    ERR_UNKNOWN_KIND,
    ERR_UNKNOWN_ORIGIN,
    ERR_UNKNOWN_TOOL,
)
from agentrt_proxy.upstream import ToolSpec
from agentrt_proxy.upstream.validation import schema_error


def validation_error(d: Decision, boundary_error: str, spec: ToolSpec | None, args: Any) -> str:
    """``boundary_error`` is what the strict JSON boundary refused while recording the
    decision (``model.record_decision``); ``args`` the arguments it parsed."""
    if not d.kind:
        return ERR_NO_KIND
    if d.origin not in ORIGINS:
        return ERR_UNKNOWN_ORIGIN.format(origin=d.origin)
    if d.kind in ("complete", "fail"):
        return boundary_error if boundary_error.startswith("result") else ""
    if d.kind != "tool_call":
        return ERR_UNKNOWN_KIND.format(kind=d.kind)
    if not d.tool:
        return ERR_NO_TOOL
    if spec is None:
        return ERR_UNKNOWN_TOOL.format(name=d.tool)
    if boundary_error:
        return boundary_error
    return args_error(spec, args)


def args_error(spec: ToolSpec, args: Any) -> str:
    """The arguments against the tool's current input schema."""
    mismatch = schema_error(spec.input_schema, args if args is not None else {})
    return ERR_ARGS_SCHEMA.format(error=mismatch) if mismatch else ""
