"""``budget release RUN -note TEXT``: give back a reservation the proxy kept spent because the
call may have taken effect (gate/budget_release.py), once the operator knows it did not.

Exit codes as the other operator commands: 0 released, 1 refused (an unknown run, one still
open, one holding nothing or only released rows; a database that cannot be opened), 2 usage.
The release and its ``budget.released`` event commit together.
"""

from __future__ import annotations

from agentrt_proxy.cli import _operator_frame as frame
from agentrt_proxy.cli import _who as who
from agentrt_proxy.cli._flags import UsageError
from agentrt_proxy.gate import budget_release
from agentrt_proxy.store import NotFound, RunStateError
from agentrt_proxy.text import escaping, operator_text

SUBCOMMANDS = ("release",)


def command(argv: list[str]) -> int:
    fl = frame.parse(argv, ("by", "note"), switches=("json",))
    if not fl.positionals or fl.positionals[0] not in SUBCOMMANDS:
        raise UsageError(operator_text.OP_BUDGET_SUBCOMMAND)
    fl.positionals.pop(0)
    run_id = frame.one_run(fl)
    note = fl.get("note") or ""
    if not note.strip():
        raise UsageError(operator_text.OP_RELEASE_NEED_NOTE)
    by = who.decider(fl.get("by"))  # -by, else $USER, the account's name, then the uid
    source = frame.database(fl)
    decider = by
    as_json = fl.on("json")
    return frame.guarded("budget release", source, lambda path: _release(path, run_id, decider, note, as_json))


def _release(path: str, run_id: str, by: str, note: str, as_json: bool) -> int:
    with frame.opened(path, writer=True) as store:
        try:
            released = budget_release.release(store, run_id, by, note)
        except NotFound:
            raise frame.OperatorError(operator_text.OP_UNKNOWN_RUN.format(run=escaping.clean(run_id, 100))) from None
        except (RunStateError, budget_release.NothingToRelease) as err:
            raise frame.OperatorError(str(err)) from None
    if as_json:
        frame.emit_json(
            {"run": run_id, "released": [{"budget": h.budget, "amount": h.amount, "was": h.state} for h in released]}
        )
        return 0
    frame.emit(
        [operator_text.op_released(run_id, h.budget, h.amount, h.state, escaping.clean(by, 200)) for h in released]
    )
    return 0
