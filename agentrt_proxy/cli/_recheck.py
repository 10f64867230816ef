"""``agentrt-proxy recheck``: today's policy handed every recorded decision (proxy-and-mcp-module §2.11, §3).

Parses the flags, opens the database read-only (and, with ``-current-tools``, the servers as
serving does), runs the re-check (``recheck_engine``) and writes the reports as text or JSON.
Exit 0 when every decision re-checked is the same; 1 when one differs, when no run or no
decision could be re-checked, or when the database or the servers cannot be opened; 2 for
usage errors.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

import anyio

from agentrt_proxy.cli._flags import UsageError, parse
from agentrt_proxy.cli._recheck_report import (
    RecheckReport,
    reports_json,
    summary,
)
from agentrt_proxy.config import Config, check_database_file, load_config
from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.gate import (
    OfferedTool,
    ProxyPolicy,
    offered_tools_from_config,
)
from agentrt_proxy.store import Store
from agentrt_proxy.text import escaping, operator_text, recheck_text
from agentrt_proxy.upstream import OpenError, OpenServers, open_servers

__all__ = ["command", "parse_options", "recheck"]


from agentrt_proxy.cli._recheck_engine import DEFAULT_LIMIT, Options, recheck_store
from agentrt_proxy.text.cli_text import PROGRAM

Opener = Callable[[Config], Any]


async def recheck(
    config: Config, options: Options, log: Callable[[str], Any], opener: Opener | None = None
) -> list[RecheckReport]:
    """Re-check under the policy the configuration gives now (proxy-and-mcp-module §2.11)."""
    check_database_file(config.database)
    store = Store.open_readonly(str(config.database))
    try:
        if not options.current_tools:
            policy = ProxyPolicy.from_config(config, offered_tools_from_config(config))
            return await anyio.to_thread.run_sync(recheck_store, store, config, options, policy, None)
        opened: OpenServers = await _open(config, log, opener)
        try:
            offered = {
                t.name: OfferedTool(t.name, t.server, t.remote, t.side_effect, t.outcome, dict(t.fixed))
                for t in opened.tools
            }
            policy = ProxyPolicy.from_config(config, offered)
            tools_now = {t.name: t.spec for t in opened.tools}
            return await anyio.to_thread.run_sync(recheck_store, store, config, options, policy, tools_now)
        finally:
            await opened.aclose()
    finally:
        store.close()


async def _open(config: Config, log: Callable[[str], Any], opener: Opener | None) -> OpenServers:
    try:
        opened: OpenServers = await (opener or open_servers)(config)
    except OpenError as err:
        _log_reports(err.reports, log)
        raise
    _log_reports(opened.reports, log)
    return opened


def _log_reports(reports: Any, log: Callable[[str], Any]) -> None:
    for report in reports:
        for line in report.lines():
            log(operator_text.operator_line(line))


# ============================================================================ the command


def parse_options(argv: list[str]) -> tuple[str, Options, bool]:
    """The configuration's path, the options, and whether to print JSON; UsageError on misuse."""
    flags = parse(argv, options=("config", "run", "session", "limit"), switches=("current-tools", "json"))
    path = flags.get("config")
    if not path or flags.positionals:
        raise UsageError(recheck_text.RECHECK_USAGE_CONFIG)
    if flags.get("run") is not None and flags.get("session") is not None:
        raise UsageError(recheck_text.RECHECK_USAGE_EXCLUSIVE)
    limit = flags.integer("limit", DEFAULT_LIMIT)
    if limit <= 0:
        raise UsageError(recheck_text.RECHECK_USAGE_LIMIT)
    options = Options(flags.get("run") or "", flags.get("session") or "", limit, flags.on("current-tools"))
    return path, options, flags.on("json")


def command(
    argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None, opener: Opener | None = None
) -> int:
    """``recheck -config FILE [-run ID | -session NAME] [-limit N] [-current-tools] [-json]``."""
    out, err_out = stdout or sys.stdout, stderr or sys.stderr
    path, options, as_json = parse_options(argv)
    try:
        config = load_config(path)
        reports = anyio.run(recheck, config, options, err_out.write, opener)
    except (AgentrtError, OSError) as err:  # a bug goes on to cli/main's one frame
        return _fail(err, err_out)
    _write(reports, config, as_json, out)
    return _exit(reports, options.session or config.session, err_out)


def _write(reports: list[RecheckReport], config: Config, as_json: bool, out: TextIO) -> None:
    if as_json:
        out.write(reports_json(reports))
        return
    for report in reports:
        out.write(report.render() + "\n")
    out.write(summary(reports, config.policy_id()) + "\n")
    out.write(recheck_text.RECHECK_SCOPE + "\n")
    out.flush()


def _exit(reports: list[RecheckReport], session: str, err_out: TextIO) -> int:
    if any(not r.same for r in reports):
        return 1
    if not reports:
        err_out.write(f"{PROGRAM}: " + escaping.sanitize(recheck_text.RECHECK_NO_RUN.format(session=session)) + "\n")
        return 1
    if sum(r.rechecked for r in reports) == 0:
        skipped = sum(r.not_recheckable for r in reports)
        err_out.write(f"{PROGRAM}: " + recheck_text.RECHECK_NOTHING.format(skipped=skipped) + "\n")
        return 1
    return 0


def _fail(err: BaseException, err_out: TextIO) -> int:
    text = " ".join(str(err).split()) or type(err).__name__
    err_out.write(escaping.sanitize(f"{PROGRAM}: error: {text}") + "\n")
    return 1
