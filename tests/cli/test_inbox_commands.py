"""The operator's inbox in process: who decides when $USER is unset, a usage error as one
line and a hint, the proxy's line naming watch beside the exact approve command."""

from __future__ import annotations

import getpass

import pytest

from agentrt_proxy.cli import _who as who
from agentrt_proxy.cli import main
from agentrt_proxy.text import operator_text


def test_with_user_unset_the_decider_is_the_systems_account_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: "from-passwd")
    assert who.deciding_user() == "from-passwd"


def test_with_no_account_name_the_decider_is_the_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("USER", raising=False)

    def nameless() -> str:
        raise KeyError("getpwuid(): uid not found")

    monkeypatch.setattr(getpass, "getuser", nameless)
    monkeypatch.setattr("os.getuid", lambda: 4242)
    assert who.deciding_user() == "uid 4242"


def test_user_set_is_the_decider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "ann")
    assert who.deciding_user() == "ann"


def test_a_usage_error_is_one_line_and_the_commands_own_usage_not_the_whole_help(capsys) -> None:
    assert main.main(["approve", "-db", "x.db"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "agentrt-proxy: approve: name one run"
    assert err[1].startswith("usage: agentrt-proxy approve ")
    assert err[2] == "run agentrt-proxy -help for every command"
    assert len(err) == 3


def test_the_proxys_line_names_watch_and_keeps_the_exact_approve_command() -> None:
    line = operator_text.operator_decide_with("agentrt-proxy", "/d/p.db", "laptop.1", "A1")
    assert 'agentrt-proxy watch -db "/d/p.db"' in line
    assert 'agentrt-proxy approve -db "/d/p.db" laptop.1 -approval A1' in line
    assert line.index("watch") < line.index("approve")


def test_verify_file_refuses_a_database_beside_it(capsys) -> None:
    assert main.main(["verify", "-file", "e.jsonl", "-db", "x.db"]) == 2
    assert "without -db and -config" in capsys.readouterr().err
