"""The command frame: help and its scope statement, exit codes, flags (proxy-and-mcp-module §3).

Original test covered: TestCLI_HelpStatesTheScope (proxy-and-mcp-module §5.6 item 1). Tests marked
`program` run the real program through conftest's `run_program`, so they also run
against the built .pyz.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentrt_proxy.cli import _flags as flags
from agentrt_proxy.cli import main
from agentrt_proxy.cli._flags import UsageError
from agentrt_proxy.text import cli_text

SCOPE_PHRASES = [
    "It governs only the calls that go through it.",
    "can approve its own request with the operator command or by editing the database",
    "one person who is both the host's user and the operator. It does not separate them.",
    "no limits or policy over a conversation's history",
    "refuses a deliberate identical repeat",
    "The pin covers what a server presents, not what it does.",
]


def collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", text)


# ----------------------------------------------------------------------- TestCLI_HelpStatesTheScope


def test_help_text_states_the_scope_in_process() -> None:
    # TestCLI_HelpStatesTheScope (in process, for the source tree)
    shown = collapsed(cli_text.help_text())
    for phrase in SCOPE_PHRASES:
        assert phrase in shown, phrase
    for phrase in (
        # Not the seed's "capped and flattened": results pass through (docs/decisions/0015).
        "Results pass through as the server sent them, cut at max_result_bytes",
        "A message of more than 500,000 JSON values and keys is refused before it is read",
        "It never sees model calls",
        "is a guard against a mistake, not a boundary",
        "None may reach the configuration, the manifests",
    ):
        assert phrase in shown, phrase


@pytest.mark.parametrize("name", sorted(main.COMMANDS))
def test_every_command_loads_from_the_package_and_refuses_an_unknown_flag(name: str, capsys) -> None:
    assert main.main([name, "-no-such-flag"]) == 2, name
    err = capsys.readouterr().err
    assert "flag provided but not defined: -no-such-flag" in err, err
    assert "lacks" not in err


# ------------------------------------------------------------------------- in-process frame and flags


def test_a_usage_error_from_a_command_exits_two(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def command(argv: list[str]) -> int:
        flags.parse(argv, options=("config",))
        return 0

    monkeypatch.setitem(main.COMMANDS, "check", command)
    assert main.main(["check", "-nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentrt-proxy: check: flag provided but not defined: -nope\n")
    assert "usage:" in err


def test_a_damaged_copy_missing_a_command_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def command(argv: list[str]) -> int:
        from agentrt_proxy import no_such_module_here  # type: ignore[attr-defined]  # noqa: F401

        return 0

    monkeypatch.setitem(main.COMMANDS, "check", command)
    assert main.main(["check", "-config", "x"]) == 1
    err = capsys.readouterr().err
    assert "no_such_module_here" in err and "reinstall" in err and err.count("\n") == 1


def test_a_bug_in_a_command_is_one_line_naming_a_file_that_holds_its_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path
) -> None:
    def command(argv: list[str]) -> int:
        raise ZeroDivisionError("the frame under test")

    monkeypatch.setitem(main.COMMANDS, "check", command)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    assert main.main(["check", "-config", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ZeroDivisionError: the frame under test" in err
    (written,) = tmp_path.glob("agentrt-proxy-error-*.txt")
    assert str(written) in err
    assert oct(written.stat().st_mode & 0o777) == "0o600"
    trace = written.read_text()
    assert trace.startswith("Traceback") and "in command" in trace


def test_a_leading_flag_means_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen: list[str] = []

    for name in main.COMMANDS:
        monkeypatch.setitem(main.COMMANDS, name, lambda argv, name=name: chosen.append(name) or 0)
    assert main.main(["-config", "x.json"]) == 0
    assert main.main(["serve", "-config", "x.json"]) == 0
    assert chosen == ["serve", "serve"]


def test_flags_accept_go_spellings() -> None:
    parsed = flags.parse(
        ["-config", "a.json", "--json", "run-1", "-limit=5", "--", "-x"],
        options=("config", "limit"),
        switches=("json",),
    )
    assert parsed.get("config") == "a.json"
    assert parsed.on("json")
    assert parsed.integer("limit", 50) == 5
    assert parsed.positionals == ["run-1", "-x"]
    assert flags.parse(["-json=false"], switches=("json",)).on("json") is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-nope"], "flag provided but not defined: -nope"),
        (["-config"], "flag needs an argument: -config"),
        (["-json=maybe"], "invalid boolean value 'maybe' for -json"),
    ],
)
def test_flag_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        flags.parse(argv, options=("config",), switches=("json",))
    assert str(caught.value) == message


def test_a_non_numeric_integer_flag_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not a whole number"):
        flags.parse(["-limit", "x"], options=("limit",)).integer("limit", 50)




# ------------------------------------------------------------------------- numbers out of range

INT64_MAX = (1 << 63) - 1
NUMERIC_FLAGS = [
    ["runs", "-offset"],
    ["runs", "-limit"],
    ["verify", "-from"],
    ["verify", "-to"],
]


@pytest.fixture
def empty_database(tmp_path: Path) -> str:
    from agentrt_proxy.store import Store

    path = str(tmp_path / "runs.db")
    Store.open(path).close()
    return path


@pytest.mark.parametrize("command", NUMERIC_FLAGS, ids=[" ".join(c) for c in NUMERIC_FLAGS])
@pytest.mark.parametrize("value", [str(INT64_MAX + 1), str(-(1 << 63) - 1), "1" + "0" * 40])
def test_a_number_past_what_the_database_holds_is_a_usage_error_not_a_traceback(
    command: list[str], value: str, empty_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main([*command, value, "-db", empty_database]) == 2
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first == f"agentrt-proxy: {command[0]}: invalid value '{value}' for flag {command[1]}: value out of range"
    assert "Traceback" not in err


# What each command says, on an empty database, for the largest number it can be given.
AT_THE_LIMIT = [
    (["runs", "-offset"], 0, "no runs\n"),
    (["runs", "-limit"], 0, "no runs\n"),
    (["verify", "-from"], 0, f"head: no events\nintact: no events in the range\n{cli_text.STATE_SKIPPED_RANGE}\n"),
    (
        ["verify", "-to"],
        1,
        f"head: no events\nintact: no events in the range\nnot reached: -to {INT64_MAX}; the chain ends at seq 0\n"
        f"{cli_text.STATE_AGREES.format(runs=0, approvals=0, calls=0, steps=0, specs=0, holds=0, tasks=0)}\n",
    ),
]


@pytest.mark.parametrize(("command", "code", "out"), AT_THE_LIMIT, ids=[" ".join(c[0]) for c in AT_THE_LIMIT])
def test_the_largest_number_the_database_holds_is_taken(
    command: list[str], code: int, out: str, empty_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main([*command, str(INT64_MAX), "-db", empty_database]) == code
    assert capsys.readouterr().out == out


@pytest.mark.parametrize("head", [f"{INT64_MAX + 1}:ab", "²:ab", "0:ab"])
def test_a_head_whose_seq_is_not_a_positive_int64_is_a_usage_error(
    head: str, empty_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(["verify", "-db", empty_database, "-head", head]) == 2
    err = capsys.readouterr().err
    assert "-head must be SEQ:HASH" in err and "Traceback" not in err
