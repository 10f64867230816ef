"""The command frame: help and its scope statement, exit codes, flags (proxy §3).

Original test covered: TestCLI_HelpStatesTheScope (proxy §5.6 item 1). Tests marked
`program` run the real program through conftest's `run_program`, so they also run
against the built .pyz.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from agentrt_proxy import __version__
from agentrt_proxy.cli import flags, main
from agentrt_proxy.cli.flags import UsageError
from tests.conftest import run_program

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


@pytest.mark.program
@pytest.mark.usefixtures("program_target")
@pytest.mark.parametrize("spelling", ["-h", "-help", "--help"])
def test_help_exits_zero_and_states_the_scope(spelling: str) -> None:
    # TestCLI_HelpStatesTheScope: -h exits 0; the six phrases after collapsing whitespace
    done = run_program([spelling])
    assert done.returncode == 0, done.stderr
    shown = collapsed(done.stdout + done.stderr)
    for phrase in SCOPE_PHRASES:
        assert phrase in shown, phrase
    assert "usage:" in shown
    assert "What it does not do:" in shown
    assert "What it keeps:" in shown


def test_help_text_states_the_scope_in_process() -> None:
    # TestCLI_HelpStatesTheScope (in process, for the source tree)
    shown = collapsed(main.help_text())
    for phrase in SCOPE_PHRASES:
        assert phrase in shown, phrase
    for phrase in (
        "Results are capped and flattened.",
        "It never sees model calls",
        "is a guard against a mistake, not a boundary",
        "None may reach the configuration, the manifests",
    ):
        assert phrase in shown, phrase


@pytest.mark.program
@pytest.mark.usefixtures("program_target")
def test_no_arguments_is_a_usage_error() -> None:
    # TestCLI_HelpStatesTheScope: no arguments -> exit 2
    done = run_program([])
    assert done.returncode == 2
    assert "usage:" in done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr


@pytest.mark.program
@pytest.mark.usefixtures("program_target")
def test_an_unknown_command_is_a_usage_error() -> None:
    done = run_program(["frobnicate", "-config", "x.json"])
    assert done.returncode == 2
    assert done.stderr.startswith('agentrt-proxy: unknown command "frobnicate"\n')
    assert "usage:" in done.stderr
    assert done.stdout == ""


@pytest.mark.program
@pytest.mark.usefixtures("program_target")
@pytest.mark.parametrize("spelling", ["--version", "-version"])
def test_version_prints_the_version(spelling: str) -> None:
    done = run_program([spelling])
    assert done.returncode == 0
    assert done.stdout == f"agentrt-proxy {__version__}\n"


@pytest.mark.parametrize("name", sorted(main.COMMANDS))
def test_every_command_loads_from_the_package_and_refuses_an_unknown_flag(name: str, capsys) -> None:
    assert main.main([name, "-no-such-flag"]) == 2, name
    err = capsys.readouterr().err
    assert "flag provided but not defined: -no-such-flag" in err, err
    assert "lacks" not in err


@pytest.mark.program
@pytest.mark.usefixtures("program_target")
@pytest.mark.parametrize("argv", [["check", "-bogus"], ["check", "-config"], ["-bogus"]])
def test_a_flag_not_defined_is_a_usage_error(argv: list[str]) -> None:
    done = run_program(argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("agentrt-proxy: ")
    assert "usage:" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.program
@pytest.mark.usefixtures("program_target")
def test_a_missing_configuration_fails_with_one_line_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    done = run_program(["check", "-config", str(missing)])
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("agentrt-proxy: error: ")
    assert str(missing) in lines[0]
    assert "not built yet" not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.program
@pytest.mark.usefixtures("program_target")
@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_configuration_others_can_write_fails_with_one_line_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "proxy.json"
    config.write_text('{"database":"runs.db","session":"s","servers":[]}')
    os.chmod(config, 0o666)
    done = run_program(["check", "-config", str(config)])
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("agentrt-proxy: error: ")
    assert str(config) in lines[0]
    assert "group or others" in lines[0]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


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


@pytest.mark.program
def test_a_proxy_whose_host_leaves_at_once_still_says_why_it_could_not_open(tmp_path: Path) -> None:
    """stdin closed at start (a host that gave up): a missing manifest is still one line, exit 1."""
    from tests.harness import write_config

    config = write_config(tmp_path)  # never pinned: the manifest does not exist
    done = run_program(["serve", "-config", str(config)], timeout=60)
    assert done.returncode == 1, done.stderr
    assert "manifest" in done.stderr and "Traceback" not in done.stderr
