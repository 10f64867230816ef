"""``agentrt-proxy scan [-json] (-config FILE | -tools FILE)``: the offline description scanner.

``-tools FILE`` reads a ``tools/list`` result (``{"tools": [...]}``, with ``prompts``,
``resources``, ``resourceTemplates`` and ``instructions`` beside it if the file has them) or an
array of tools;
``-config FILE`` connects to every configured server as ``pin`` does and scans its tools, its
``instructions`` and its prompts. Exit 0 with no hard finding, 1 with one (or when the input
cannot be read), 2 on a usage error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio

from agentrt_proxy.cli._flags import UsageError, parse
from agentrt_proxy.config import Config, load_config
from agentrt_proxy.errors.bugs import expected
from agentrt_proxy.scan import Listing, ScanResult, scan
from agentrt_proxy.text import cli_text, escaping
from agentrt_proxy.upstream import Connector, default_connector
from agentrt_proxy.upstream.scan_gate import explanation, finding_line, live_listing, scan_server

PROGRAM = "agentrt-proxy"


class _Unreadable(Exception):
    """The -tools file is not a tools/list result; the message says why. Caught in ``command``."""


def _listing_of(path: str) -> Listing:
    """The -tools file as the scanner reads it: its tools, and, in a ``{"tools": ...}`` object,
    its ``prompts``, ``resources``, ``resourceTemplates`` and ``instructions`` too."""
    tools, tree = _tools_of(path)
    extra: dict[str, Any] = tree if isinstance(tree, dict) else {}
    if isinstance(extra.get("result"), dict) and "tools" not in extra:
        extra = extra["result"]
    lists: dict[str, list[Any]] = {}
    for key in ("prompts", "resources", "resourceTemplates"):
        value = extra.get(key)
        lists[key] = value if isinstance(value, list) else []
    instructions = extra.get("instructions") if isinstance(extra.get("instructions"), str) else None
    return live_listing(
        Path(path).name, tools, instructions, lists["prompts"], [*lists["resources"], *lists["resourceTemplates"]]
    )


def _tools_of(path: str) -> tuple[list[Any], Any]:
    try:
        tree = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise _Unreadable(cli_text.SCAN_UNREADABLE.format(file=path, error=err.strerror or err)) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise _Unreadable(cli_text.SCAN_NOT_JSON.format(file=path, error=err)) from None
    tools = tree.get("tools") if isinstance(tree, dict) else tree
    if isinstance(tree, dict) and "result" in tree and tools is None:
        result = tree["result"]  # a whole JSON-RPC answer
        tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise _Unreadable(cli_text.SCAN_NOT_TOOLS.format(file=path))
    return tools, tree


async def _scan_config(config: Config, connector: Connector) -> ScanResult:
    # One server after another: a failure names its server, and a scan is not a hot path.
    return scan([await scan_server(server, connector) for server in config.servers])


def _write(result: ScanResult, as_json: bool, many: bool, out: TextIO) -> None:
    if as_json:
        tree = result.as_json()
        tree["findings"] = [
            {**shown, "explanation": explanation(finding)}
            for shown, finding in zip(tree["findings"], result.findings, strict=True)  # type: ignore[call-overload]
        ]
        out.write(json.dumps(tree, ensure_ascii=False) + "\n")
        return
    for finding in result.findings:
        out.write(finding_line(finding, prefix=f"{escaping.sanitize(finding.server)}: " if many else "") + "\n")
    hard = sum(1 for f in result.findings if f.hard)
    out.write(cli_text.SCAN_SUMMARY.format(tools=result.tools_scanned, hard=hard, soft=len(result.findings) - hard))


def command(
    argv: list[str],
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    connector: Connector = default_connector,
) -> int:
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    flags = parse(argv, options=("config", "tools"), switches=("json",))
    config_path, tools_path = flags.get("config"), flags.get("tools")
    if flags.positionals or (config_path is None) == (tools_path is None):
        raise UsageError(cli_text.SCAN_ONE_SOURCE)
    try:
        if tools_path is not None:
            result = scan([_listing_of(tools_path)])
        else:
            assert config_path is not None
            result = anyio.run(_scan_config, load_config(config_path), connector)
    except BrokenPipeError:
        raise
    except Exception as err:  # an unreadable file, a server that does not answer: one line; a bug goes on
        known = expected(err)
        if known is None:
            raise
        err_out.write(escaping.sanitize(f"{PROGRAM}: scan: {known}") + "\n")
        return 1
    _write(result, flags.on("json"), tools_path is None, out)
    out.flush()
    return 1 if result.hard else 0
