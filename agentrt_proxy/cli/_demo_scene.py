"""The demo's scene: its directory and files, the program's commands, the host's sessions.

``Scene`` is what every step of ``cli.demo`` stands on: the operator's configuration and the
fake bank's ledger in a directory of its own, this same program run as separate processes
(``pin``, ``check``, ``runs``, and the operator's ``approve``/``reject``), and the host's MCP
sessions, through the proxy or straight with the payment server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrt_proxy.cli._demo_stage import (
    DemoFailure,
    Program,
    Seen,
    compact,
    expect_seen,
    indented,
    one_line,
    readable_json,
    run_child,
    say,
)
from agentrt_proxy.store import WAITING
from agentrt_proxy.text import demo_text as words

SESSION = "demo"
LEASE_TTL_SECONDS = 3
CALL_TIMEOUT_NS = 60 * 1_000_000_000
CONNECT_TIMEOUT_NS = 30 * 1_000_000_000
OPERATOR = "demo-operator"


@dataclass
class Scene:
    """The demo's directory and its files, this program's commands run in it, and the host's
    sessions: what every step stands on."""

    program: Program
    directory: Path
    shown_log: set[str] = field(default_factory=set)
    operator_blocks_shown: int = 0
    budgets_seen: list[dict[str, str]] = field(default_factory=list)  # as the last runs -json read them

    @property
    def config(self) -> Path:
        return self.directory / "proxy.json"

    @property
    def database(self) -> Path:
        return self.directory / "runs.db"

    @property
    def ledger(self) -> Path:
        return self.directory / "ledger.txt"

    # ------------------------------------------------------------------ files

    def configuration(self) -> dict[str, Any]:
        return {
            "database": "runs.db",
            "session": SESSION,
            "hold": "0s",
            "lease_ttl": f"{LEASE_TTL_SECONDS}s",
            "budgets": [{"name": "monthly", "tools": ["bank_pay"], "limit": 1400, "window": "720h"}],
            "servers": [
                {
                    "name": "bank",
                    "command": self.program.fakebank_command(),
                    "env": [f"FAKE_PAYMENTS_LEDGER={self.ledger}"],
                    "manifest": "bank.manifest.json",
                    "rules": {
                        "balance": {"side_effect": "read_only", "timeout": "5s"},
                        "pay": {"side_effect": "remote_mutation", "timeout": "30s", "amount_field": "amount"},
                    },
                }
            ],
        }

    def write_configuration(self) -> str:
        text = readable_json(self.configuration()) + "\n"
        fd = os.open(self.config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return text

    def write_variant(self, name: str, env: Sequence[str], pay: dict[str, str] | None = None) -> Path:
        """A configuration beside proxy.json (owner-only, as the program asks): the same, its
        payment server started with ``env`` as well and ``pay``'s rule updated with ``pay``."""
        changed = self.configuration()
        server = changed["servers"][0]
        server["env"].extend(env)
        server["rules"]["pay"].update(pay or {})
        path = self.directory / name
        path.write_text(readable_json(changed) + "\n", encoding="utf-8")
        os.chmod(path, 0o600)
        return path

    def payments(self) -> int:
        from agentrt_proxy.testing.fakebank import count_payments

        return count_payments(self.ledger)

    def ledger_lines(self) -> list[str]:
        try:
            return self.ledger.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    # ------------------------------------------------------------------ the program's commands

    def run_program(self, args: Sequence[str], *, what: str) -> subprocess.CompletedProcess[str]:
        """Run a subcommand of this same program in the demo's directory, as a separate process."""
        return run_child(self.program, self.directory, args, what)

    def shell(self, args: Sequence[str], *, what: str, show_output: bool = True) -> str:
        """Print ``$ agentrt-proxy <args>``, run it, print its output; fail on a non-zero exit."""
        say(words.shell_line(args))
        done = self.run_program(args, what=what)
        if show_output:
            indented(done.stdout, "  ")
        if done.returncode != 0:
            indented(done.stderr, "  ")
            raise DemoFailure(words.command_exited(what, shlex.join(args), done.returncode))
        return done.stdout

    def read_runs(self, what: str) -> list[dict[str, Any]]:
        """The runs as ``runs -json`` lists them; the budgets it read are kept in ``budgets_seen``."""
        done = self.run_program(["runs", "-db", "runs.db", "-json"], what=what)
        if done.returncode != 0:
            raise DemoFailure(words.runs_json_exited(what, done.returncode, one_line(done.stderr)))
        try:
            listed = json.loads(done.stdout)
            runs: list[dict[str, Any]] = listed["runs"]
            self.budgets_seen = list(listed.get("budgets", []))
        except (ValueError, KeyError, TypeError) as err:
            raise DemoFailure(words.runs_json_no_runs(what, one_line(done.stdout))) from err
        return runs

    def waiting_approval(self, what: str) -> tuple[str, str]:
        """The one run waiting for an operator and its approval, read as the operator would."""
        runs = self.read_runs(what)
        waiting = [r for r in runs if r.get("status") == WAITING and r.get("pending_approval_id")]
        if len(waiting) != 1:
            raise DemoFailure(words.not_one_waiting(what, len(waiting)))
        return waiting[0]["id"], waiting[0]["pending_approval_id"]

    def operator(self, verb: str, note: str, what: str, *, expect_kind: str | None = None) -> str:
        """The operator, in a process of its own, decides the one waiting approval; its run's id."""
        run_id, approval_id = self.waiting_approval(what)
        args = [verb, "-db", "runs.db", run_id, "-approval", approval_id, "-by", OPERATOR, "-note", note]
        if verb == "approve":
            args.append("-yes")
        proc = subprocess.Popen(
            [*self.program.argv, *args],
            cwd=self.directory,
            env=self.program.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        say(words.operator_runs(proc.pid, shlex.join(args)))
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.communicate()
            raise DemoFailure(words.operator_too_slow(what, verb)) from exc
        lines = out.splitlines()
        kind = next((line.split(None, 1)[1] for line in lines if line.startswith("kind ")), "")
        if self.operator_blocks_shown == 0:
            shown = lines  # the first time, everything the operator reads before deciding
        else:
            end = next((i for i, line in enumerate(lines) if line.startswith("----- end of approval")), -1)
            shown = [line for line in lines if line.startswith("kind ")] + lines[end + 1 :]
        self.operator_blocks_shown += 1
        for line in shown:
            say(f"      | {line}")
        if proc.returncode != 0:
            indented(err, "      | ")
            raise DemoFailure(words.operator_exited(what, verb, proc.returncode))
        if expect_kind is not None and kind != expect_kind:
            raise DemoFailure(words.operator_wrong_kind(what, expect_kind, kind))
        return run_id

    # ------------------------------------------------------------------ the host

    @contextlib.asynccontextmanager
    async def proxy(self, config: Path | None = None) -> AsyncIterator[Any]:
        """A host session with a freshly started proxy (``serve -config proxy.json``, or ``config``)."""
        from agentrt_proxy.mcp.client import open_connection
        from agentrt_proxy.mcp.spec import ServerSpec

        spec = ServerSpec(
            name="gated",
            command=[*self.program.argv, "serve", "-config", str(config or self.config)],
            env=self.program.extra_env_entries(),
            connect_timeout_ns=CONNECT_TIMEOUT_NS,
        )
        async with open_connection(spec) as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def bank(self) -> AsyncIterator[Any]:
        """A host session straight with the fake payment server, no proxy in between."""
        from agentrt_proxy.mcp.client import open_connection
        from agentrt_proxy.mcp.spec import ServerSpec

        spec = ServerSpec(
            name="bank",
            command=self.program.fakebank_command(),
            env=[f"FAKE_PAYMENTS_LEDGER={self.ledger}"],
            connect_timeout_ns=CONNECT_TIMEOUT_NS,
        )
        async with open_connection(spec) as conn:
            yield conn

    async def call(self, conn: Any, tool: str, args: dict[str, Any], *, quiet: bool = False) -> Seen:
        """The model calls ``tool``; print the call and what the model sees."""
        from agentrt_proxy.mcp.outcomes import HttpStatus, NoAnswer, Refused, Result, RpcError

        if not quiet:
            say(words.model_calls(tool, compact(args)))
        outcome = await conn.call_tool(tool, compact(args), CALL_TIMEOUT_NS)
        if isinstance(outcome, Result):
            seen = Seen(outcome.text, outcome.is_error)
        elif isinstance(outcome, RpcError):
            seen = Seen(words.seen_protocol_error(outcome.code, outcome.message), True)
        elif isinstance(outcome, NoAnswer):
            seen = Seen(words.seen_no_answer(outcome.detail), True)
        elif isinstance(outcome, HttpStatus):
            seen = Seen(words.seen_refused(outcome.detail), True)
        elif isinstance(outcome, Refused):
            seen = Seen(words.seen_unusable(outcome.reason), True)
        else:  # pragma: no cover - the client returns one of the five
            seen = Seen(repr(outcome), True)
        if not quiet:
            say(words.model_sees(seen.is_error, one_line(seen.text)))
        self.show_log(conn)
        return seen

    def show_log(self, conn: Any) -> None:
        """New lines the proxy wrote to its stderr for the operator (the host's log)."""
        tail = getattr(getattr(conn, "_transport", None), "stderr_tail", None)
        if tail is None:
            return
        for line in tail().splitlines():
            if line in self.shown_log or not any(mark in line for mark in words.LOG_WORTH_SHOWING):
                continue
            self.shown_log.add(line)
            say(words.proxy_log(line))

    @staticmethod
    def pid_of(conn: Any) -> int:
        pid = getattr(getattr(conn, "_transport", None), "pid", None)
        if not isinstance(pid, int):
            raise DemoFailure(words.PROXY_PID_UNKNOWN)
        return pid

    # ------------------------------------------------------------------ checks

    expect = staticmethod(expect_seen)

    def expect_payments(self, step: str, want: int, narration: str) -> None:
        have = self.payments()
        say(words.payments_made(have, narration))
        if have != want:
            raise DemoFailure(words.payments_wrong(step, want, have))
