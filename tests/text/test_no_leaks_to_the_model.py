"""Nothing a model reads names an operator command, the database, the configuration or a run id.

Every model-visible template in ``text/`` is walked: all of ``text/model_text.py`` (what the model is
told) and ``text/record_text.py`` (the runtime's records: the policy's reasons, a tool's recorded
error and a run's end reach the model through ``denied``, ``duplicate`` and the status tool),
``text/pin_text.py`` (why a tool is withheld: ``tool_unpinned`` repeats it to the model), and
the templates of an operator's module that a model may read too (``MODEL_READS_TOO``). Every module
of ``text/`` is either walked whole or named in ``OPERATOR_MODULES`` with who reads it, so a new
module of sentences is judged here before it ships. The templates are generated from the modules with
``vars()`` and ``inspect``, not from a hand-kept list: every str constant (formatted with sample
values when it has ``{fields}``), every str in a dict of them, and every function (called with
arguments built from its signature: strings, ints, lists of strings, None where Optional, every
way an attempt can have ended).

Three checks. Rendered with plain samples, no template writes a leak of its own. No template that
reaches the model takes a parameter or field whose name says it holds a run id, a path, the
database, the configuration or the program. And each parameter or field a template echoes, when
handed a run id or a path, is one a caller fills on purpose (``ECHOED``, each with why); a
template that echoes anything else fails until someone judges it here. Templates that only the
operator reads are named in ``OPERATOR_ONLY`` with where they go and which rules they may break.
"""

from __future__ import annotations

import inspect
import itertools
import pkgutil
import re
import string
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentrt_proxy import text as text_package
from agentrt_proxy.text import model_text, operator_text, pin_text, record_text

MODULES = (model_text, record_text, pin_text)  # walked whole: a model reads them

# The modules of text/ that only the operator reads, each with where its words go.
OPERATOR_MODULES = {
    "operator_text": "the proxy's standard-error lines and the subcommands' output",
    "cli_text": "the command line's own words: the scope statement, the usage, how to run the program",
    "console_text": "the operator's console: its terminal lines and its pages",
    "demo_text": "the demo's narration and the line it fails with, on the terminal that ran it",
    "recheck_text": "what recheck reports to the operator who ran it: usage, scope, each run's lines",
    "escaping": "no sentences: the escaping that makes text safe to show",
    "oauth_text": "why an OAuth login, refresh or token file failed, and check's word on a token",
    "load_text": "check's and serve's report lines on a server's load, and why a server or its manifest cannot load",
}

# Templates of an operator's module that a model may read too: walked with the rest.
MODEL_READS_TOO: dict[types.ModuleType, dict[str, str]] = {
    operator_text: {
        name: "the proxy's closing decision of a run its call did not complete, recorded as the run's reason"
        for name in ("CLOSE_ERROR", "CLOSE_DENIED", "CLOSE_INVALID", "CLOSE_TAKEN_OVER", "CLOSE_NOT_SENT")
    }
    | {"CLOSE_UNRECORDED": "the closing decision of a run whose result could not be recorded"},
}

RUN_ID = "s.0123456789abcdef"
DATABASE = "/srv/leak-sample-db/proxy-7f3a.db"
CONFIGURATION = "/srv/leak-sample-config/proxy-7f3a.json"
LEAKY_VALUES = {"run id": RUN_ID, "database path": DATABASE, "configuration path": CONFIGURATION}
PLAIN = "plain words"
APPROVAL_ID = "0123456789abcdef0123456789abcdef"  # approval ids are shown, so the model can ask about them

# What each rule looks for in a rendered text.
RULES: dict[str, list[re.Pattern[str]]] = {
    "operator command": [
        re.compile(r"\bagentrt-proxy\s"),
        re.compile(r"\bagentrt\s+(?:approve|reject)\b"),
        re.compile(r"\b(?:approve|reject)\b"),  # the subcommands, as words
        re.compile(r"(?<![\w-])-(?:db|config|approval|note|by|yes)\b"),
    ],
    "path": [
        re.compile(r"leak-sample-(?:db|config)"),
        re.compile(r"\.(?:db|json)\b"),
        re.compile(r"(?:^|[\s(\"'=])~?/[\w.-]+/"),
    ],
    "run id": [re.compile(re.escape(RUN_ID)), re.compile(r"\b[A-Za-z0-9_-]{1,64}\.[0-9a-f]{16}\b")],
}

# Words a model text uses that a rule would read as a command, each judged.
ALLOWED_PHRASES = {
    # pending_approval tells the model not to ask the user to approve the request: the verb, not the command.
    "ask the user to approve it",
}

# A parameter or field so named would hold what the model must never see.
FORBIDDEN_NAME = re.compile(r"run_?id|path|database|config|program|owner", re.IGNORECASE)

# Parameters and fields a template echoes on purpose: text its caller chose to show the model.
ECHOED = {
    "approval_id": "the approval id the model may ask the status tool about",
    "task_id": "a task id the host was answered with (unguessable, not the run id), which the model may ask about",
    "next_approval": "the approval id that now waits",
    "latest": "the approval id of the later request",
    "id": "an approval id",
    "tool": "the registered tool name the operator's configuration accepted",
    "name": "a tool's name",
    "remote": "a tool's name on its server",
    "server": "the server's name in the configuration",
    "scope": "the OAuth scope a server's 403 insufficient_scope asked for (a server's word, quoted)",
    "uri": "the resource URI the host itself asked for",
    "capability": "the client capability a server's request needs (sampling or elicitation: a FORWARDED_BY value)",
    "method": "the method a server asked its client for (sampling/createMessage or elicitation/create)",
    "target": "the method a server asked its client for, which its relayed request's goal names (GOAL_RELAYED)",
    "cls": "a side-effect class",
    "currency": "a call's currency, shown only once it is an ISO 4217 code (three ASCII letters)",
    "outcome": "a policy outcome, or the recorded outcome a duplicate repeats",
    "reason": "the policy's reason, a refusal's reason, or why a run ended (each escaped and bounded)",
    "error": "a tool's recorded error or a schema mismatch (escaped and bounded)",
    "error_text": "a tool's recorded error (escaped and bounded)",
    "result_text": "a tool's recorded result (escaped and bounded)",
    "answer": "an answer the model is given anyway, repeated as a task's status message (built from these templates)",
    "note": "the operator's note, written for the model",
    "what": "what UNAVAILABLE says could not be done (a model_text constant)",
    "why": "why an approved request did not execute (a model_text constant), or why a prompt's name is refused",
    "description": "one request's status line, built from these templates",
    "descriptions": "the status lines, built from these templates",
    "args_text": "the request's own arguments, which the model sent",
    "until": "a time",
    "finished_at": "a time",
    "started_at": "a time",
    "age": "a duration",
    "window": "a duration",
    "kind": "how a call went unanswered, or a decision's kind",
    "origin": "a decision's origin",
    "failure": "how a tool failed",
    "detail": "the wire's description of the failure (server and tool names, a time-out)",
    "message": "the server's JSON-RPC error message",
    "seconds": "a tool's timeout, in seconds",
    "action": "the name of a reconciliation action the policy answered (the policy's own code)",
    "status": "a run's or an approval's state",
    "n": "a count or a step number",
    "code": "a JSON-RPC error code",
    "seq": "an event's sequence number",
    "hash": "a hex digest (of an approval's request, in verify's findings)",
    "prev": "an event's sequence number",
    "found": "a schema version",
    "known": "a schema version",
    "shown": "an approval's hash, as shown to the operator",
    "stored": "an approval's hash, as stored",
    "budget": "a budget's name in the configuration",
    "field": "the amount or currency field a tool's rule declares (a name or a JSON Pointer)",
    "remaining": "an amount (an exact decimal)",
    "limit": "a budget's limit (an exact decimal)",
    "amount": "the amount a call spends (an exact decimal)",
    "excess": "by how much a call exceeds a budget (an exact decimal)",
    "per": "a budget's window, as PER_WINDOW words it",
    "frees": "when a budget frees up, as FREES_* word it",
    "at": "a time",
    "source_server": "the untrusted server's name in the configuration",
    "via": "the method that carried an untrusted server's text to the host (a listing, a notification, progress)",
    "lines": "the status tool's budget lines, built from status_budget_line",
    "key": "a keyword of the server's input schema",
    "keyword": "a keyword of the server's input schema",
    "pointer": "a JSON Pointer into the server's input schema",
    "item": "a value of the server's input schema (quoted), which the server sent",
    "parameter": "a parameter of the tool that the operator's rule fixes",
    "pattern": "the tool-name pattern",
    "mismatch": "how the server's hints contradict the operator's class (built from these templates)",
    "hints": "the hints that changed since the pin, built from HINT_FLIP",
    "hint": "an MCP annotation's name",
    "rules": "the scan rules whose hard findings refused a tool at pin",
    "difference": "how a server's prompt differs from its pin (what the server lists now)",
    "before": "an annotation's pinned value (true or false)",
    "after": "an annotation's live value (true or false)",
}

# Templates only the operator reads: (the rules they may break, where they go).
OPERATOR_ONLY: dict[str, tuple[set[str], str]] = {
    "NOTICE_INTERRUPTED": ({"run id"}, "gate/_policy: the approval's presentation, in the operator's approval block"),
    "ERR_NOT_WAITING": ({"run id"}, "gate/approvals: refuses the operator's approve, reject or cancel"),
    "ERR_NOT_FOUND": ({"run id"}, "gate/approvals: refuses the operator's decision"),
    "ERR_CANNOT_CANCEL": ({"run id"}, "gate/approvals: refuses the operator's cancel"),
    "ERR_OPEN_STEP": ({"run id"}, "gate/_session: an error; the proxy logs it and tells the model UNAVAILABLE"),
    "ERR_NO_STEP": ({"run id"}, "gate/_session: an error, logged; the model is told UNAVAILABLE"),
    "ERR_NOT_ALLOWED": ({"run id"}, "gate/_session: an error, logged; the model is told UNAVAILABLE"),
    "ERR_LEASE_EXPIRED": ({"run id"}, "gate/_session: an error, logged; the model is told UNAVAILABLE"),
    "ERR_LEASE_OTHER": ({"run id"}, "gate/_session: an error, logged; the model is told UNAVAILABLE"),
    "ERR_TERMINAL": ({"run id"}, "gate/_attach: an error, logged; the model is told UNAVAILABLE"),
    "ERR_NO_AWAITING": ({"run id"}, "gate/_attach: an error, logged; the model is told UNAVAILABLE"),
    "ERR_NOT_APPROVED": ({"run id"}, "gate/_attach: an error, logged; the model is told UNAVAILABLE"),
    "ERR_TOOL_GONE": ({"run id"}, "gate/_attach: an error, logged; the model is told UNAVAILABLE"),
    "MSG_RUN_STATE": ({"run id"}, "store: a lost compare-and-set, logged"),
    "MSG_RUN_LEASED": ({"run id"}, "store: a run leased by another gate, logged"),
    "MSG_RUN_ID_TAKEN": ({"run id"}, "store/_index: the proxy's own log line"),
    "MSG_SYMLINK": ({"path"}, "store/_schema: opening the database refused, for the operator"),
    "MSG_NOT_REGULAR": ({"path"}, "store/_schema: opening the database refused, for the operator"),
    "MSG_INSECURE": ({"path"}, "store/_schema: opening the database refused; it says the chmod to type"),
    "MSG_SIDECAR_OWNER": ({"path"}, "store/_schema: opening the database refused, for the operator"),
    "MSG_MISSING": ({"path"}, "store/_schema: opening the database refused, for the operator"),
    "MSG_NOT_WRITABLE": ({"path"}, "store/_schema: opening the database refused, for the operator"),
    "MSG_INDEX_NEWER": ({"operator command"}, "store/_schema: names the program that migrated the index"),
    "STATE_ROW_FIELD": (set(), "store/_replay: a finding of verify's state check (a run's key), for the operator"),
    "STATE_ROW_MISSING": (set(), "store/_replay: a finding of verify's state check (a run's key), for the operator"),
    "STATE_ROW_UNEXPLAINED": (
        set(),
        "store/_replay: a finding of verify's state check (a run's key), for the operator",
    ),
}


# ------------------------------------------------------------------------------ the walk


class Template(typing.NamedTuple):
    name: str
    fields: tuple[str, ...]  # the parameters or the format fields
    render: Callable[[dict[str, Any]], Iterator[str]]  # every text the template writes for these values


def defined_here(module: types.ModuleType, value: Any) -> bool:
    return getattr(value, "__module__", module.__name__) == module.__name__


def format_fields(text: str) -> dict[str, str]:
    """``{field[:spec]}`` of a str.format template: each field's format spec. A text whose braces
    hold no identifier (the status tool's JSON schema) is not a template: it has none."""
    try:
        parsed = [(name, spec or "") for _, name, spec, _ in string.Formatter().parse(text) if name is not None]
    except ValueError:
        return {}
    if not all(name.isidentifier() for name, _ in parsed):
        return {}
    return dict(parsed)


def sample_for_field(spec: str, value: str) -> Any:
    return 420 if spec and spec[-1] in "dox" else value


def string_template(name: str, text: str) -> Template:
    specs = format_fields(text)

    def render(values: dict[str, Any]) -> Iterator[str]:
        if not specs:
            yield text  # not a template (or one without fields): the text itself
            return
        yield text.format(**{field: sample_for_field(spec, values[field]) for field, spec in specs.items()})

    return Template(name, tuple(specs), render)


def candidates(parameter: inspect.Parameter, hint: Any, value: str) -> list[Any]:
    """Every sample a parameter takes: ``value`` for a string, and what else its type allows."""
    if parameter.name == "ended":
        return [*model_text.ENDED_HOW, "something else"]
    args = typing.get_args(hint)
    if hint is bool:
        return [False, True]
    if hint is int:
        return [0, 3, 600_000_000_000]
    if typing.get_origin(hint) is list:
        return [[], [value], [value, value]]
    if type(None) in args:
        return [None, value]
    assert hint is str, f"{parameter.name}: no sample for {hint!r}: add one here"
    return [value]


def function_template(name: str, function: Callable[..., str]) -> Template:
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function)
    names = tuple(signature.parameters)

    def render(values: dict[str, Any]) -> Iterator[str]:
        choices = [candidates(p, hints[p.name], values[p.name]) for p in signature.parameters.values()]
        for arguments in itertools.product(*choices):
            text = function(*arguments)
            assert isinstance(text, str), name
            yield text

    return Template(name, names, render)


def templates(module: types.ModuleType) -> list[Template]:
    found: list[Template] = []
    for name, value in vars(module).items():
        if name.startswith("__") or not defined_here(module, value):
            continue
        if isinstance(value, str):
            found.append(string_template(name, value))
        elif isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            found.extend(string_template(f"{name}[{key!r}]", text) for key, text in value.items())
        elif inspect.isfunction(value):
            found.append(function_template(name, value))
    return found


ALL = [template for module in MODULES for template in templates(module)] + [
    template for module, names in MODEL_READS_TOO.items() for template in templates(module) if template.name in names
]


APPROVAL_FIELDS = {"approval_id", "next_approval", "latest", "id"}


def plain_values(template: Template) -> dict[str, Any]:
    return {field: APPROVAL_ID if field in APPROVAL_FIELDS else PLAIN for field in template.fields}


def broken_rules(text: str) -> set[str]:
    for phrase in ALLOWED_PHRASES:
        text = text.replace(phrase, "")
    return {rule for rule, patterns in RULES.items() if any(p.search(text) for p in patterns)}


def allowed_to_break(template: Template) -> set[str]:
    return OPERATOR_ONLY.get(template.name, (set(), ""))[0]


# ----------------------------------------------------------------------------- the tests


def test_the_walk_finds_the_templates_of_both_modules() -> None:
    names = {template.name for template in ALL}
    # a sample of each kind: a constant, a format string, a function, a dict entry, a helper
    assert {"SHUTTING_DOWN", "REASON_RULE", "pending_approval", "status_list", "_note", "_DO_NOT_CALL_AGAIN"} <= names
    assert "ENDED_HOW['timed_out']" in names and "HOW_ENDED['cut_off']" in names
    assert len(ALL) > 150


def test_every_module_of_text_is_walked_or_said_to_be_read_by_the_operator_only() -> None:
    found = {info.name for info in pkgutil.iter_modules(text_package.__path__)}
    walked = {module.__name__.rpartition(".")[2] for module in MODULES}
    assert found == walked | set(OPERATOR_MODULES), found ^ (walked | set(OPERATOR_MODULES))
    assert not walked & set(OPERATOR_MODULES)


def test_every_template_a_model_reads_too_exists_in_its_module() -> None:
    names = {template.name for template in ALL}
    wanted = {name for chosen in MODEL_READS_TOO.values() for name in chosen}
    assert wanted <= names, wanted - names


@pytest.mark.parametrize("module", MODULES, ids=[module.__name__ for module in MODULES])
def test_the_walk_sees_every_kind_of_value_the_modules_hold(module: types.ModuleType) -> None:
    # A sentence kept in some other container (a tuple, a class) would escape the walk: refuse it here.
    unseen = [
        name
        for name, value in vars(module).items()
        if not name.startswith("__")
        and defined_here(module, value)
        and not isinstance(value, (str, int, re.Pattern, types.ModuleType))
        and not inspect.isfunction(value)
        and not (isinstance(value, dict) and all(isinstance(v, (str, bool)) for v in value.values()))
    ]
    assert unseen == []


def test_every_operator_only_template_exists_and_needs_its_exemption() -> None:
    by_name = {template.name: template for template in ALL}
    for name, (rules, _where) in OPERATOR_ONLY.items():
        template = by_name[name]
        broken = set().union(*(broken_rules(text) for text in template.render(plain_values(template))))
        forbidden = {field for field in template.fields if FORBIDDEN_NAME.search(field)}
        assert broken or forbidden, f"{name} leaks nothing: take it out of OPERATOR_ONLY"
        assert broken <= rules, name


def test_every_echoed_name_is_used_and_none_is_a_forbidden_one() -> None:
    used = {field for template in ALL for field in template.fields}
    assert set(ECHOED) <= used, set(ECHOED) - used
    assert not [name for name in ECHOED if FORBIDDEN_NAME.search(name)]


@pytest.mark.parametrize("template", ALL, ids=[template.name for template in ALL])
def test_a_template_rendered_with_plain_values_writes_no_leak_of_its_own(template: Template) -> None:
    for text in template.render(plain_values(template)):
        assert broken_rules(text) <= allowed_to_break(template), text


@pytest.mark.parametrize("template", ALL, ids=[template.name for template in ALL])
def test_no_template_the_model_reads_takes_a_run_id_a_path_or_the_program(template: Template) -> None:
    if template.name in OPERATOR_ONLY:
        return
    assert [field for field in template.fields if FORBIDDEN_NAME.search(field)] == []


@pytest.mark.parametrize("template", ALL, ids=[template.name for template in ALL])
def test_a_template_echoes_a_run_id_or_a_path_only_through_a_field_its_caller_fills_on_purpose(
    template: Template,
) -> None:
    if template.name in OPERATOR_ONLY:
        return
    for field, (what, leaky) in itertools.product(template.fields, LEAKY_VALUES.items()):
        values = {**plain_values(template), field: leaky}
        if any(leaky in text for text in template.render(values)):
            assert field in ECHOED, f"{template.name} echoes its {field!r} (handed a {what}): judge it in ECHOED"


def test_the_rules_catch_each_kind_of_leak() -> None:
    # The checks themselves: what a leaking template would write is caught, the model's own words are not.
    assert broken_rules(f"decide with: agentrt-proxy approve -db {DATABASE} {RUN_ID}") == {
        "operator command",
        "path",
        "run id",
    }
    assert broken_rules("run laptop.00000000000000ff was cut off") == {"run id"}
    assert broken_rules("see ~/agentrt/proxy.json") == {"path"}
    assert broken_rules(model_text.pending_approval(APPROVAL_ID)) == set()
    assert broken_rules("an operator rejected this exact request (approval 0123)") == set()
