"""Names, not strings (issue 23): a status, a run's reason or a policy's outcome is written as a
literal only where it is defined, so renaming one cannot silently break a rule that compares it.

The homes: ``store/_states.py`` (run, step, approval, hold and task statuses; runs.reason),
``config/model.py`` (the policy's outcomes) and ``mcp/tasks_wire.py`` (the MCP task statuses,
which the store imports). Not counted: docstrings, the ``text/`` package's sentences, ``__all__``,
and field names (a dict display's key, a subscript, the key of ``.get``/``.pop``/``.setdefault``):
a configuration's "deny" list or a capability's "interrupted" member is a field, not a value.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import agentrt_proxy
from agentrt_proxy.config import model as config_model
from agentrt_proxy.mcp import tasks_wire
from agentrt_proxy.store import _states as states

PACKAGE = Path(agentrt_proxy.__file__).resolve().parent
HOMES = {"store/_states.py", "config/model.py", "mcp/tasks_wire.py"}
FIELD_METHODS = {"get", "pop", "setdefault"}

# (module, literal) -> (how many times, why it is another vocabulary that merely shares a spelling)
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("cli/_console_read.py", "failed"): (1, "FILTER_FAILED: the console's run filter, not a step's status"),
    ("cli/_demo_crashes.py", "INTERRUPTED"): (2, "the word a model's answer starts with, not a run's status"),
    ("cli/demo.py", "interrupted"): (1, "the demo's own failure line on Ctrl-C"),
    ("config/_loading.py", "deny"): (1, "the rule's field name: the list of denied parameters"),
    ("gate/attempts.py", "interrupted"): (1, "KIND_INTERRUPTED: an observation's kind"),
    ("gate/attempts.py", "cancelled"): (1, "FAILURE_CANCELLED: an attempt's failure, cancelled here"),
    ("gate/_model.py", "pending"): (1, "PENDING: a verdict's outcome (the call awaits an approval)"),
    ("gate/_model.py", "completed"): (1, "RECONCILE_COMPLETED: what a takeover's reconciliation found"),
    ("mcp/_http_listen.py", "failed"): (1, "Listen.FAILED: a standalone HTTP stream's ending"),
    ("store/_replay_rows.py", "executing"): (1, "_EXECUTING: a replayed call's phase"),
}


def vocabulary() -> set[str]:
    """Every status, run reason and policy outcome, read from their homes."""
    words: set[str] = set()
    for what in (states.RUN, states.STEP, states.APPROVAL, states.HOLD, states.TASK):
        words |= {s for s in states.states_of(what) if isinstance(s, str)}
    words |= {states.RUN_INTERRUPTED, *states.RUN_REASONS}
    words |= {*config_model.OUTCOMES, config_model.ABORT}
    words |= {tasks_wire.TASK_WORKING, *tasks_wire.TERMINAL}
    return words


def _ignored(tree: ast.Module) -> set[int]:
    """The ids of the string constants that are docstrings, ``__all__`` entries or field names."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            out |= {id(n) for n in ast.walk(node.value)}
        elif isinstance(node, ast.Dict):
            out |= {id(k) for k in node.keys if k is not None}
        elif isinstance(node, ast.Subscript):
            out.add(id(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FIELD_METHODS:
            out |= {id(node.args[0])} if node.args else set()
    return out


def literals_outside_homes(words: set[str]) -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in HOMES or rel.startswith("text/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        ignored = _ignored(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in words and id(node) not in ignored:
                found[(rel, node.value)] += 1
    return found


def test_a_status_reason_or_outcome_is_written_as_a_literal_only_in_its_home() -> None:
    found = literals_outside_homes(vocabulary())
    unexplained = {
        f"{module}: {word!r} x{n}": ALLOWED.get((module, word), (0, ""))[0]
        for (module, word), n in sorted(found.items())
        if n > ALLOWED.get((module, word), (0, ""))[0]
    }
    assert not unexplained, f"use the named constant (store/_states, config/model, mcp/tasks_wire): {unexplained}"


def test_every_allowed_same_spelled_word_is_still_there() -> None:
    found = literals_outside_homes(vocabulary())
    stale = {key: n for key, (n, _why) in ALLOWED.items() if found[key] != n}
    assert not stale, f"the allowlist no longer matches the code (remove or correct): {stale}"


def test_the_vocabulary_holds_every_kind_of_word() -> None:
    words = vocabulary()
    for word in (
        states.WAITING,
        states.AWAITING,
        states.APPROVAL_PENDING,
        states.HOLD_SPENT,
        states.TASK_WORKING,
        states.END_APPROVAL_REJECTED,
        states.END_LIMIT_STEPS,
        config_model.REQUIRE_APPROVAL,
        config_model.ABORT,
    ):
        assert word in words


def test_a_literal_status_outside_its_home_is_found() -> None:
    tree = ast.parse('if run.status == "WAITING_FOR_APPROVAL":\n    finish(reason="approval_rejected")\n')
    ignored = _ignored(tree)
    seen = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in ignored]
    assert set(seen) <= vocabulary() and len(seen) == 2


def test_the_store_names_the_wire_s_task_statuses() -> None:
    assert (states.TASK_WORKING, states.TASK_COMPLETED, states.TASK_FAILED, states.TASK_CANCELLED) == (
        tasks_wire.TASK_WORKING,
        tasks_wire.TASK_COMPLETED,
        tasks_wire.TASK_FAILED,
        tasks_wire.TASK_CANCELLED,
    )
    assert set(states.TASK_TERMINAL) == set(tasks_wire.TERMINAL)
