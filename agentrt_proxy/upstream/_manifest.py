"""A server's manifest: what pin recorded of its tools (proxy-and-mcp-module §1.9), written and read back.

The manifest is read through the ownership check, refuses a repeated key and ignores fields it
does not know.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from agentrt_proxy import canonical
from agentrt_proxy.canonical import JSONBoundaryError, Number, schema_form
from agentrt_proxy.canonical.encoder import MANIFEST, encode
from agentrt_proxy.config import ConfigError, read_owned
from agentrt_proxy.errors import ConfigurationError
from agentrt_proxy.text import escaping, load_text
from agentrt_proxy.upstream.pins import (
    Manifest,
    PinnedPrompt,
    PinnedTool,
    PromptShapeError,
    ScanRecord,
    normalise_annotations,
    pin_prompt,
)


class ManifestError(ConfigurationError):
    """A manifest that cannot be read or used; the message names the file."""


# ---------------------------------------------------------------------------- the manifest


def manifest_text(manifest: Manifest) -> str:
    """The manifest file's text: proxy-and-mcp-module §1.9's shape as Go's ``MarshalIndent`` writes it (two spaces,
    fields in this order, HTML-safe), newline-terminated."""
    tools: dict[str, Any] = {}
    for name in sorted(manifest.tools):
        tool = manifest.tools[name]
        entry: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "input_schema": schema_form.parse_form(tool.input_schema),
            "schema_hash": tool.schema_hash,
            "description_hash": tool.description_hash,
        }
        if tool.annotations is not None:
            entry["annotations"] = tool.annotations
        if tool.display_pinned:
            entry["display"] = _display_entry(tool)
        tools[name] = entry
    document: dict[str, Any] = {"server": manifest.server, "pinned_at": manifest.pinned_at, "tools": tools}
    if manifest.prompts is not None:  # only a server whose prompts pass through pins them
        document["prompts"] = {name: _prompt_entry(manifest.prompts[name]) for name in sorted(manifest.prompts)}
    if manifest.scan is not None:  # the scan's refusals and the operator's overrides (decisions 0018, 0019)
        document["scan"] = {
            key: {tool: [dict(f) for f in found] for tool, found in sorted(getattr(manifest.scan, key).items())}
            for key in ("refused", "overridden")
        }
    return encode(document, MANIFEST) + "\n"


def _display_entry(tool: PinnedTool) -> dict[str, Any]:
    """The pinned title and output schema; an empty object pins "none of either"."""
    display: dict[str, Any] = {}
    if tool.title is not None:
        display["title"] = tool.title
    if tool.output_schema is not None:
        display["output_schema"] = schema_form.parse_form(tool.output_schema)
    return display


def _prompt_entry(prompt: PinnedPrompt) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": prompt.name}
    if prompt.title is not None:
        entry["title"] = prompt.title
    entry["description"] = prompt.description
    entry["arguments"] = prompt.arguments_tree()
    return entry


def write_manifest(path: Path | str, manifest: Manifest) -> None:
    """Write atomically (a temporary file renamed over the old one), mode 0600."""
    target = Path(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise ManifestError(f"manifest {target}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
            file.write(manifest_text(manifest))
            file.flush()
            os.fchmod(file.fileno(), 0o600)
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    os.chmod(target, 0o600)


def read_manifest(path: Path | str) -> Manifest:
    """Read a manifest through the ownership check; unknown fields are ignored."""
    try:
        data = read_owned(path)
    except ConfigError as err:
        raise ManifestError(str(err)) from None
    try:
        tree = canonical.parse_strict(data)
    except JSONBoundaryError as err:
        raise ManifestError(load_text.MANIFEST_NOT_JSON.format(file=path, reason=err.reason)) from None
    return _manifest_from(tree, str(path))


def _string(value: Any, where: str, path: str, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or isinstance(value, Number):
        raise ManifestError(load_text.MANIFEST_NOT_STRING.format(file=path, where=where))
    return value


def _manifest_from(tree: Any, path: str) -> Manifest:
    if not isinstance(tree, dict):
        raise ManifestError(load_text.MANIFEST_NOT_OBJECT.format(file=path))
    server = _string(tree.get("server"), "server", path, required=False)
    pinned_at = _string(tree.get("pinned_at"), "pinned_at", path, required=False)
    tools_value = tree.get("tools")
    if tools_value is None:
        tools_value = {}
    if not isinstance(tools_value, dict):
        raise ManifestError(load_text.MANIFEST_TOOLS.format(file=path))
    tools = {name: _pinned_from(name, entry, path) for name, entry in tools_value.items()}
    return Manifest(
        server=server,
        pinned_at=pinned_at,
        tools=tools,
        prompts=_prompts_from(tree.get("prompts"), path),
        scan=_scan_from(tree.get("scan"), path),
    )


def _scan_from(value: Any, path: str) -> ScanRecord | None:
    """The optional "scan" section: tool -> its findings, under "refused" and "overridden"."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ManifestError(load_text.MANIFEST_SCAN.format(file=path))
    parts: dict[str, dict[str, tuple[dict[str, str], ...]]] = {}
    for key in ("refused", "overridden"):
        section = value.get(key) or {}
        if not isinstance(section, dict) or not all(
            isinstance(found, list) and all(isinstance(f, dict) for f in found) for found in section.values()
        ):
            raise ManifestError(load_text.MANIFEST_SCAN_PART.format(file=path, key=key))
        parts[key] = {
            tool: tuple({k: v for k, v in f.items() if isinstance(v, str)} for f in found)
            for tool, found in section.items()
        }
    return ScanRecord(refused=parts["refused"], overridden=parts["overridden"])


def _prompts_from(value: Any, path: str) -> dict[str, PinnedPrompt] | None:
    """The optional "prompts" section; a manifest written before prompts were pinned has none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ManifestError(load_text.MANIFEST_PROMPTS.format(file=path))
    prompts: dict[str, PinnedPrompt] = {}
    for key, entry in value.items():
        where = load_text.MANIFEST_PROMPT_AT.format(q_key=escaping.go_quote(key))
        if not isinstance(entry, dict) or entry.get("name") != key:
            raise ManifestError(
                load_text.MANIFEST_PROMPT_NAME.format(file=path, where=where, q_key=escaping.go_quote(key))
            )
        try:
            prompts[key] = pin_prompt(entry)
        except PromptShapeError as err:
            raise ManifestError(load_text.MANIFEST_PROMPT_BAD.format(file=path, where=where, error=err)) from None
    return prompts


def _pinned_from(key: str, entry: Any, path: str) -> PinnedTool:
    where = load_text.MANIFEST_TOOL_AT.format(q_key=escaping.go_quote(key))
    if not isinstance(entry, dict):
        raise ManifestError(load_text.MANIFEST_ENTRY.format(file=path, where=where))
    annotations = entry.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        raise ManifestError(load_text.MANIFEST_ANNOTATIONS.format(file=path, where=where))
    schema = entry.get("input_schema")
    display = entry.get("display")
    if display is not None and not isinstance(display, dict):
        raise ManifestError(load_text.MANIFEST_DISPLAY.format(file=path, where=where))
    title, output_schema = None, None
    if display is not None:
        if display.get("title") is not None:
            title = _string(display.get("title"), f"{where}.display.title", path)
        if display.get("output_schema") is not None:
            output_schema = schema_form.canonical_schema(canonical.policy_text(display["output_schema"]))
    return PinnedTool(
        name=key,
        description=_string(entry.get("description"), f"{where}.description", path, required=False),
        input_schema=schema_form.canonical_schema(canonical.policy_text(schema)),
        schema_hash=_string(entry.get("schema_hash"), f"{where}.schema_hash", path, required=False),
        description_hash=_string(entry.get("description_hash"), f"{where}.description_hash", path, required=False),
        annotations=normalise_annotations(annotations) if annotations is not None else None,
        title=title,
        output_schema=output_schema,
        display_pinned=display is not None,
    )


# -------------------------------------------------------------------------- connecting
