"""``agentrt-proxy pin`` and ``agentrt-proxy check``: record what each server presents, and report what is offered.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

import anyio

from agentrt_proxy.cli.flags import UsageError, parse
from agentrt_proxy.config import Config, ConfigError, check_database_file, load_config
from agentrt_proxy.text import escaping, operator_text
from agentrt_proxy.upstream import (
    Connector,
    DownServer,
    LoadError,
    ManifestError,
    OpenError,
    OpenServers,
    PinnedTool,
    Report,
    default_connector,
    hints_text,
    open_servers,
    pin_server,
    read_manifest,
    write_manifest,
)

PROGRAM = "agentrt-proxy"
NAME_COLUMNS = 28
HINT_COLUMNS = 26
DESCRIPTION_BYTES = 72


def _config_path(argv: list[str]) -> str:
    flags = parse(argv, options=("config",))
    path = flags.get("config")
    if not path or flags.positionals:
        raise UsageError("-config <file> is required and nothing follows it")
    return path


def _fail(err: BaseException | str, stderr: TextIO) -> int:
    if isinstance(err, BrokenPipeError):
        raise err  # the reader stopped reading; the command frame ends quietly
    stderr.write(escaping.sanitize(f"{PROGRAM}: error: {err}") + "\n")
    return 1


def pin_line(tool: PinnedTool) -> str:
    description = escaping.clean(" ".join(tool.description.split()), DESCRIPTION_BYTES)
    name = escaping.sanitize(tool.name)
    return f"  {name:<{NAME_COLUMNS}} {hints_text(tool.annotations):<{HINT_COLUMNS}} {description}"


async def _pin_all(
    config: Config, config_path: str, stdout: TextIO, connector: Connector, overrides: frozenset[tuple[str, str]]
) -> None:
    from agentrt_proxy.cli import pin_scan

    for server in config.servers:
        manifest = await pin_server(server, connector=connector)
        manifest = pin_scan.gate(config, server, manifest, overrides, stdout)  # issue 15: the scan gates the pin
        await anyio.to_thread.run_sync(write_manifest, server.manifest, manifest)
        stdout.write(
            f"server {escaping.sanitize(server.name)}: {len(manifest.tools)} tools pinned in {server.manifest}, "
            "with the server's own hints, which classify nothing:\n"
        )
        for name in sorted(manifest.tools):
            stdout.write(pin_line(manifest.tools[name]) + "\n")
        if manifest.prompts is not None:
            stdout.write(f"server {escaping.sanitize(server.name)}: {len(manifest.prompts)} prompts pinned:\n")
            for name in sorted(manifest.prompts):
                prompt = manifest.prompts[name]
                description = escaping.clean(" ".join(prompt.description.split()), DESCRIPTION_BYTES)
                stdout.write(f"  {escaping.sanitize(name):<{NAME_COLUMNS}} {description}\n")
        stdout.flush()
    stdout.write(f"classify the tools in the configuration's rules, then: {PROGRAM} check -config {config_path}\n")


def pin_command(
    argv: list[str],
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    connector: Connector = default_connector,
) -> int:
    """``pin -config FILE``: record every server's tools into its manifest (no reach check)."""
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    from agentrt_proxy.cli.pin_scan import take_overrides

    argv, overrides = take_overrides(argv)  # issue 15: -override TOOL:RULE takes a tool the scan refused
    config_path = _config_path(argv)
    try:
        config = load_config(config_path)
        anyio.run(_pin_all, config, config_path, out, connector, overrides)
    except (ConfigError, LoadError, ManifestError, OSError) as err:
        return _fail(err, err_out)
    except Exception as err:  # a connect or listing failure from the wire layer
        return _fail(err, err_out)
    return 0


async def _check(
    config: Config, stdout: TextIO, connector: Connector, scan_failures: list[str] | None = None
) -> list[DownServer]:
    """Open as serving would; the servers that did not answer (serving would retry them)."""
    try:
        opened = await open_servers(config, connector=connector, keep_down=True)
    except OpenError as err:
        _write_reports(err.reports, stdout)
        raise
    try:
        _write_reports(opened.reports, stdout)
        await _write_passthrough(config, opened, stdout)
        if scan_failures is not None:  # issue 15: check runs the scan too
            from agentrt_proxy.cli.pin_scan import check_scan

            scan_failures.extend(check_scan(config, opened, stdout))
    finally:
        await opened.aclose()
    return opened.down


async def _write_passthrough(config: Config, opened: OpenServers, stdout: TextIO) -> None:
    """What each opted-in server passes through besides tools: resources, and each prompt."""
    from agentrt_proxy.upstream.passthrough_pins import passthrough_report

    held = {getattr(getattr(c, "server", None), "name", None): c for c in opened.connections}
    for server in config.servers:
        if (server.resources or server.prompts) and server.name in held:
            pins = read_manifest(server.manifest).prompts if server.prompts else None
            for line in await passthrough_report(server, pins, held[server.name]):
                stdout.write(line + "\n")


def _write_reports(reports: Sequence[Report], stdout: TextIO) -> None:
    for report in reports:
        for line in report.lines():
            stdout.write(line + "\n")


def check_command(
    argv: list[str],
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    connector: Connector = default_connector,
) -> int:
    """``check -config FILE``: load everything as serving would and report what is offered.

    Unlike the original, it does not create or migrate the database: it checks the file
    as serving would before opening it, and leaves it as it found it.
    """
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    config_path = _config_path(argv)
    try:
        config = load_config(config_path)
        check_database_file(config.database)
        scan_failures: list[str] = []
        down = anyio.run(_check, config, out, connector, scan_failures)
    except (ConfigError, OpenError) as err:
        out.flush()
        return _fail(err, err_out)
    except Exception as err:  # never a traceback: one line naming what failed
        out.flush()
        return _fail(err, err_out)
    if down:  # serving would offer their tools from the manifests and retry: a check fails
        out.flush()
        for server in down:
            _fail(operator_text.server_down_in_check(server.server, server.error), err_out)
        return 1
    if scan_failures:  # issue 15: a hard finding on an offered tool that no pin reviewed
        out.flush()
        for line in scan_failures:
            _fail(line, err_out)
        return 1
    out.write(f"status tool: {config.status_tool}\n")
    out.write(f"session: {config.session}\n")
    out.write(f"database: {config.database}\n")
    return 0
