"""What every part of a call's handling shares, wired once by ``runtime.Runtime``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrt_proxy.config import Config
from agentrt_proxy.gate import Clock, Gate, Limits, ProxyPolicy, proxy_limits
from agentrt_proxy.proxy._guarded import Guarded, UntrustedSource
from agentrt_proxy.proxy._rules import ToolFacts
from agentrt_proxy.store import Approval, Store
from agentrt_proxy.text import operator_text
from agentrt_proxy.upstream import LoadedTool

MAX_DECIDES = 6  # a call decides at most this often (five lost races), then answers IN_PROGRESS
HOLD_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class CallSettings:
    """The configuration's part in handling a call."""

    session: str
    hold: int  # ns a call waiting on an approval is held; 0: answer pending at once
    max_pending: int
    grant_ttl: int  # ns; 0: a grant never grows too old
    limits: Limits  # every run's: three steps, and the configured approval and grant expiries
    hold_poll: float  # seconds between two looks at a held approval

    @classmethod
    def from_config(cls, config: Config, hold_poll: float | None = None) -> CallSettings:
        return cls(
            session=config.session,
            hold=config.hold,
            max_pending=config.max_pending,
            grant_ttl=config.grant_ttl,
            limits=proxy_limits(config.approval_ttl, config.grant_ttl),
            hold_poll=HOLD_POLL_SECONDS if hold_poll is None else hold_poll,
        )


class OperatorLog:
    """The proxy's lines on stderr about calls: what failed, and what an operator can do."""

    def __init__(self, write_stderr: Callable[[str], Any], program: str, database: str) -> None:
        self.write_stderr = write_stderr
        self.program = program  # how the operator runs this program, for "decide with: …"
        self.database = database

    def error(self, text: str) -> None:
        self.write_stderr(operator_text.operator_error(text))

    def waits(self, approval: Approval, tool_name: str) -> None:
        """An approval waits: which, and the command that decides it."""
        self.write_stderr(operator_text.operator_waits(approval.id, approval.kind, tool_name, approval.run_id))
        self.write_stderr(
            operator_text.operator_decide_with(self.program, self.database, approval.run_id, approval.id)
        )

    def cut_off(self, run_id: str, tool_name: str) -> None:
        self.write_stderr(operator_text.operator_cut_off(run_id, tool_name))

    def unknown(self, run_id: str, tool_name: str, ended: str) -> None:
        self.write_stderr(operator_text.operator_unknown(run_id, tool_name, ended))


@dataclass(frozen=True)
class CallParts:
    store: Store
    gate: Gate
    policy: ProxyPolicy
    tools: Mapping[str, LoadedTool]  # by registered name
    clock: Clock  # the proxy's clock (leases always use the wall clock)
    settings: CallSettings
    log: OperatorLog
    # Budgets and the clean-context rule (None: the configuration has neither), and what this
    # process returned from untrusted servers (docs/decisions/0017).
    guarded: Guarded | None = None
    untrusted: UntrustedSource = field(default_factory=UntrustedSource)

    def tool_facts(self) -> dict[str, ToolFacts]:
        """What the rules need of each offered tool."""
        return {
            name: ToolFacts(tool.name, tool.side_effect, tool.repeat_window, tool.known_answer)
            for name, tool in self.tools.items()
        }
