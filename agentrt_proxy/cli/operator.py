"""The operator's subcommands over the database, named in one place.

Each lives with its concern: ``reading`` (runs, show), ``deciding`` (approve, reject) and
``verify_chain`` (verify), all in the frame of ``operator_frame`` (arguments, opening the
store, the one-line refusal); the store's read queries are ``store.reads`` and the formatting
``operator_views``. Callers that take the whole set import it from here; the console also
reaches a few helpers under the names they had when this was one module.
"""

from __future__ import annotations

from agentrt_proxy.cli.deciding import DecideArgs, approve_command, reject_command, write_approval_block
from agentrt_proxy.cli.deciding import decide_shown as _decide_shown
from agentrt_proxy.cli.deciding import select_approval as _select_approval
from agentrt_proxy.cli.operator_frame import OperatorError, Source
from agentrt_proxy.cli.operator_frame import guarded as _guarded
from agentrt_proxy.cli.operator_frame import no_positionals as _no_positionals
from agentrt_proxy.cli.operator_frame import opened as _opened
from agentrt_proxy.cli.operator_frame import read_run as _read_run
from agentrt_proxy.cli.reading import runs_command, show_command
from agentrt_proxy.cli.verify_chain import VerifyArgs, verify_command
from agentrt_proxy.cli.verify_chain import verify_lines as _verify_lines
from agentrt_proxy.store import approval_reason as _approval_reason

__all__ = [
    "DecideArgs",
    "OperatorError",
    "Source",
    "VerifyArgs",
    "_approval_reason",
    "_decide_shown",
    "_guarded",
    "_no_positionals",
    "_opened",
    "_read_run",
    "_select_approval",
    "_verify_lines",
    "approve_command",
    "reject_command",
    "runs_command",
    "show_command",
    "verify_command",
    "write_approval_block",
]
