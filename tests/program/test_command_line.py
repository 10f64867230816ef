"""The program's command line as a user meets it: help, version, usage errors, one-line refusals.

Black-box: each test runs the real program, on the source tree and again on the .pyz.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentrt_proxy import __version__
from tests.cli.test_command_line import SCOPE_PHRASES, collapsed
from tests.conftest import run_program


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


@pytest.mark.program
def test_a_proxy_whose_host_leaves_at_once_still_says_why_it_could_not_open(tmp_path: Path) -> None:
    """stdin closed at start (a host that gave up): a missing manifest is still one line, exit 1."""
    from tests.harness import write_config

    config = write_config(tmp_path)  # never pinned: the manifest does not exist
    done = run_program(["serve", "-config", str(config)], timeout=60)
    assert done.returncode == 1, done.stderr
    assert "manifest" in done.stderr and "Traceback" not in done.stderr
