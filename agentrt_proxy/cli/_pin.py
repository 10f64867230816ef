"""``agentrt-proxy pin`` and ``agentrt-proxy check``: record what each server presents, and report what is offered."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence
from typing import TextIO

import anyio

from agentrt_proxy.cli import _pin_review as pin_review
from agentrt_proxy.cli import _review_view as review_view
from agentrt_proxy.cli._flags import Flags, UsageError, parse
from agentrt_proxy.config import Config, ConfigError, check_database_file, load_config
from agentrt_proxy.errors.bugs import expected
from agentrt_proxy.text import cli_text, escaping, operator_text
from agentrt_proxy.upstream import (
    Connector,
    DownServer,
    LoadError,
    LoadReport,
    Manifest,
    ManifestError,
    OpenError,
    OpenServers,
    PinnedTool,
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
    flags = parse(argv, options=("config",), switches=("json",))
    path = flags.get("config")
    if not path or flags.positionals:
        raise UsageError(cli_text.NEEDS_CONFIG)
    return path


def _review_flags(argv: list[str]) -> Flags:
    """``pin``'s review flags (decision 0018): -review [-json], or -accept SERVER [-tools a,b] -expect FP."""
    flags = parse(argv, options=("config", "accept", "tools", "expect"), switches=("review", "json"))
    if flags.get("accept") is not None and not flags.get("expect"):
        raise UsageError(cli_text.ACCEPT_NEEDS_EXPECT)
    if flags.get("accept") is None and (flags.get("expect") is not None or flags.get("tools") is not None):
        raise UsageError(cli_text.EXPECT_NEEDS_ACCEPT)
    if flags.on("review") and flags.get("accept") is not None:
        raise UsageError(cli_text.REVIEW_OR_ACCEPT)
    return flags


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
    config: Config,
    config_path: str,
    stdout: TextIO,
    connector: Connector,
    ask: pin_review.Ask,
    overrides: frozenset[tuple[str, str]] = frozenset(),
) -> list[str]:
    """Pin every server; one error line per server whose changes were not taken (never silently:
    decision 0018) and per server the scan left tools out of (each named with its rules: decision 0019).
    The scan gates each listing first: a tool with a hard finding is left out unless overridden."""
    from agentrt_proxy.cli import _pin_scan as pin_scan

    refused: list[str] = []
    left_out: list[str] = []  # a tool the scan kept out fails the pin, naming it (decision 0022)
    for server in config.servers:
        listed = await pin_server(server, connector=connector)
        manifest = pin_scan.gate(config, server, listed, overrides, stdout)
        dropped = pin_scan.left_out(listed, manifest)
        named = frozenset(tool for tool, _rule in overrides)
        allowed, review = pin_review.repin_allowed(server, manifest, config_path, stdout, ask, named)
        if not allowed:
            assert review is not None
            refused.append(cli_text.repin_refused(server.name))
            continue
        await anyio.to_thread.run_sync(write_manifest, server.manifest, manifest)
        _write_pinned(server.name, str(server.manifest), manifest, stdout)
        if dropped:
            left_out.append(cli_text.refused_by_scan(server.name, dropped))
    if not refused:
        stdout.write(cli_text.PIN_THEN_CHECK.format(program=PROGRAM, config=config_path))
    return refused + left_out


def _write_pinned(name: str, path: str, manifest: Manifest, stdout: TextIO) -> None:
    """What ``pin`` says of one server it pinned."""
    server_name = escaping.sanitize(name)
    stdout.write(cli_text.TOOLS_PINNED.format(server=server_name, n=len(manifest.tools), manifest=path))
    for tool in sorted(manifest.tools):
        stdout.write(pin_line(manifest.tools[tool]) + "\n")
    if manifest.prompts is not None:
        stdout.write(cli_text.PROMPTS_PINNED.format(server=server_name, n=len(manifest.prompts)))
        for prompt_name in sorted(manifest.prompts):
            prompt = manifest.prompts[prompt_name]
            description = escaping.clean(" ".join(prompt.description.split()), DESCRIPTION_BYTES)
            stdout.write(f"  {escaping.sanitize(prompt_name):<{NAME_COLUMNS}} {description}\n")
    stdout.flush()


def pin_command(
    argv: list[str],
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    connector: Connector = default_connector,
    ask: pin_review.Ask | None = None,
) -> int:
    """``pin -config FILE``: record every server's tools into its manifest (no reach check).

    A server already pinned whose listing changed is pinned only once its review is accepted
    (on the terminal, or ``-accept``): ``pin_review``."""
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    from agentrt_proxy.cli._pin_scan import take_overrides

    argv, overrides = take_overrides(argv)  # decision 0019: -override TOOL:RULE takes a tool the scan refused
    flags = _review_flags(argv)
    config_path = flags.get("config")
    if not config_path or flags.positionals:
        raise UsageError(cli_text.NEEDS_CONFIG)
    try:
        config = load_config(config_path)
        if flags.on("review"):
            anyio.run(pin_review.review_all, config, config_path, out, connector, flags.on("json"))
            return 0
        if flags.get("accept") is not None:
            return _accept(config, config_path, flags, out, err_out, connector, overrides)
        asker = ask or pin_review.ask_on_terminal
        refused = anyio.run(_pin_all, config, config_path, out, connector, asker, overrides)
    except (ConfigError, LoadError, ManifestError, OSError) as err:
        return _fail(err, err_out)
    except UsageError:
        raise
    except Exception as err:  # a connect or listing failure, maybe inside a task group; a bug goes on
        known = expected(err)
        if known is None:
            raise
        return _fail(known, err_out)
    for line in refused:
        err_out.write(line + "\n")
    return 1 if refused else 0


def _accept(
    config: Config,
    config_path: str,
    flags: Flags,
    out: TextIO,
    err_out: TextIO,
    connector: Connector,
    overrides: frozenset[tuple[str, str]] = frozenset(),
) -> int:
    """``pin -accept SERVER [-tools a,b] -expect FP``: pin what the review showed, or nothing.
    The scan gates what is accepted as it gates a bare pin: an accepted tool with a hard finding
    is left out unless ``-override`` names it, and the command then fails naming it."""
    from agentrt_proxy.cli import _pin_scan as pin_scan

    name = flags.get("accept") or ""
    try:
        manifest, chosen, carried = anyio.run(
            pin_review.accept_server,
            config,
            config_path,
            name,
            pin_review.tools_flag(flags.get("tools")),
            flags.get("expect") or "",
            out,
            connector,
        )
    except pin_review.AcceptRefused as refused:
        out.flush()
        return _fail(str(refused), err_out)
    server = next(s for s in config.servers if s.name == name)
    gated = pin_scan.gate(config, server, manifest, overrides | carried, out)
    write_manifest(server.manifest, gated)
    _write_pinned(server.name, str(server.manifest), gated, out)
    dropped = {tool: rules for tool, rules in pin_scan.left_out(manifest, gated).items() if tool in chosen}
    if dropped:
        err_out.write(cli_text.refused_by_scan(server.name, dropped, accepted=True) + "\n")
        return 1
    return 0


async def _check(
    config: Config,
    stdout: TextIO,
    connector: Connector,
    config_path: str = "",
    as_json: bool = False,
    scan_failures: list[str] | None = None,
) -> list[DownServer]:
    """Open as serving would; the servers that did not answer (serving would retry them)."""
    text = io.StringIO() if as_json else stdout  # -json: the review alone, as data
    try:
        opened = await open_servers(config, connector=connector, keep_down=True)
    except OpenError as err:
        _write_reports(err.reports, text)
        await _review_when_nothing_opened(config, config_path, stdout, connector, as_json)
        raise
    try:
        _write_reports(opened.reports, text)
        await _write_passthrough(config, opened, text)
        if scan_failures is not None:  # decision 0019: check runs the scan too
            from agentrt_proxy.cli._pin_scan import check_scan

            scan_failures.extend(check_scan(config, opened, text))
        await _write_reviews(config, config_path, opened, stdout, as_json)
    finally:
        await opened.aclose()
    return opened.down


async def _write_reviews(config: Config, config_path: str, opened: OpenServers, stdout: TextIO, as_json: bool) -> None:
    """What changed since each server's pin (decision 0018): every refused or new tool, reviewed."""
    reviews = await pin_review.review_of_opened(config, opened)
    if as_json:
        pin_review.write_json(reviews, stdout)
        return
    for review in reviews:
        for line in review_view.review_lines(review, config_path):
            stdout.write(line + "\n")


async def _review_when_nothing_opened(
    config: Config, config_path: str, stdout: TextIO, connector: Connector, as_json: bool
) -> None:
    """A load that registered nothing still shows why: each server listed afresh and reviewed."""
    with contextlib.suppress(Exception):  # the open's own error is what the command reports
        await pin_review.review_all(config, config_path, stdout, connector, as_json)


async def _write_passthrough(config: Config, opened: OpenServers, stdout: TextIO) -> None:
    """What each opted-in server passes through besides tools: resources, and each prompt."""
    from agentrt_proxy.upstream.passthrough_pins import passthrough_report

    held = {getattr(getattr(c, "server", None), "name", None): c for c in opened.connections}
    for server in config.servers:
        if (server.resources or server.prompts) and server.name in held:
            pins = read_manifest(server.manifest).prompts if server.prompts else None
            for line in await passthrough_report(server, pins, held[server.name]):
                stdout.write(line + "\n")


def _write_reports(reports: Sequence[LoadReport], stdout: TextIO) -> None:
    for report in reports:
        for line in report.lines():
            stdout.write(line + "\n")


def _write_token_states(config: Config, config_path: str, stdout: TextIO) -> None:
    """What each OAuth server's token is (docs/oauth.md): missing, expired, about to expire, held."""
    import time

    from agentrt_proxy.oauth.serving import token_state

    for server in config.servers:
        if server.auth is None:
            continue
        state = token_state(server, time.time())
        if state is None:
            stdout.write(operator_text.oauth_token_missing(server.name, config_path) + "\n")
        else:
            stdout.write(escaping.sanitize(operator_text.oauth_token_state(server.name, *state)) + "\n")


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
    as_json = parse(argv, options=("config",), switches=("json",)).on("json")
    try:
        config = load_config(config_path)
        check_database_file(config.database)
        if not as_json:
            _write_token_states(config, config_path, out)
        scan_failures: list[str] = []
        down = anyio.run(_check, config, out, connector, config_path, as_json, scan_failures)
    except (ConfigError, OpenError) as err:
        out.flush()
        return _fail(err, err_out)
    except Exception as err:  # one line naming what failed (a bug goes on to cli/main's frame)
        out.flush()
        known = expected(err)
        if known is None:
            raise
        return _fail(known, err_out)
    if down:  # serving would offer their tools from the manifests and retry: a check fails
        out.flush()
        for server in down:
            _fail(operator_text.server_down_in_check(server.server, server.error), err_out)
        return 1
    if scan_failures:  # decision 0019: a hard finding on an offered tool that no pin reviewed
        out.flush()
        for line in scan_failures:
            _fail(line, err_out)
        return 1
    from agentrt_proxy.config.budget_fields import unpriced

    for entry in unpriced(config.servers, config.budgets):
        err_out.write(operator_text.unpriced_budget(*entry))
    if as_json:
        return 0
    out.write(f"status tool: {config.status_tool}\n")
    out.write(f"session: {config.session}\n")
    out.write(f"database: {config.database}\n")
    return 0
