"""The console's rules of admission (cli/_console_guard.py) and its beacon (cli/_console_beacon.py),
one table each: pure functions, no socket."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentrt_proxy.cli import _console_beacon as console_beacon
from agentrt_proxy.cli._console_guard import SECURITY_HEADERS, Guard

PORT = 43117


@pytest.mark.parametrize(
    ("host", "admitted"),
    [
        (f"127.0.0.1:{PORT}", True),
        (f"localhost:{PORT}", True),
        (f"LOCALHOST:{PORT}", True),
        ("127.0.0.1", False),  # no port: not this console's address
        (f"127.0.0.1:{PORT + 1}", False),  # another console
        (f"evil.example:{PORT}", False),  # DNS rebinding: the attacker's name, our port
        (f"127.0.0.1.evil.example:{PORT}", False),
        (f"[::1]:{PORT}", False),  # the console does not listen there
        ("", False),
        (None, False),
    ],
)
def test_only_the_consoles_own_loopback_address_is_admitted_as_host(host: str | None, admitted: bool) -> None:
    assert Guard(PORT).host_ok(host) is admitted


@pytest.mark.parametrize(
    ("origin", "admitted"),
    [
        (None, True),  # a browser that sends none: the CSRF token still decides
        (f"http://127.0.0.1:{PORT}", True),
        (f"http://localhost:{PORT}", True),
        ("null", False),  # a sandboxed frame, a file:// page
        (f"https://127.0.0.1:{PORT}", False),
        (f"http://127.0.0.1:{PORT + 1}", False),
        ("http://evil.example", False),
        (f"http://evil.example:{PORT}", False),
    ],
)
def test_a_state_change_is_admitted_only_from_the_consoles_own_origin(origin: str | None, admitted: bool) -> None:
    assert Guard(PORT).origin_ok(origin) is admitted


def test_the_token_opens_one_session_once_and_a_wrong_one_none() -> None:
    guard = Guard(PORT)
    assert guard.exchange("x" + guard.token[1:]) is None and not guard.spent  # a wrong one spends nothing
    first = guard.exchange(guard.token)
    assert first is not None
    assert guard.exchange(guard.token) is None  # spent
    session, csrf = first
    cookie = f"other=1; {guard.cookie_name}={session}"
    assert guard.session_of(cookie) == (session, csrf)
    assert guard.session_of(f"agentrt_console_{PORT + 1}={session}") is None  # another console's name
    assert guard.session_of(f"{guard.cookie_name}=forged") is None
    assert guard.session_of('bad"cookie') is None and guard.session_of(None) is None
    assert guard.csrf_ok(csrf, csrf) and not guard.csrf_ok(csrf, csrf + "x") and not guard.csrf_ok(csrf, None)


def test_the_cookie_is_http_only_same_site_strict_and_path_scoped() -> None:
    guard = Guard(PORT)
    parts = [p.strip() for p in guard.set_cookie("s").split(";")]
    assert parts[0] == f"agentrt_console_{PORT}=s" and {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(parts)


def test_the_policy_allows_nothing_from_outside_and_no_inline_script() -> None:
    headers = dict(SECURITY_HEADERS)
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self';" in csp and "unsafe-inline" not in csp
    assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "same-origin"


def test_the_beacon_names_the_port_of_a_live_console_and_never_a_token(tmp_path: Path) -> None:
    db = str(tmp_path / "proxy.db")
    assert console_beacon.running_url(db) is None
    console_beacon.write(db, PORT)
    assert console_beacon.running_url(db) == f"http://127.0.0.1:{PORT}/"
    assert set(json.loads(Path(db + ".console").read_text())) == {"port", "pid"}
    assert oct(os.stat(db + ".console").st_mode)[-3:] == "600"
    console_beacon.remove(db)
    assert not os.path.exists(db + ".console")


@pytest.mark.parametrize(
    "content",
    [
        '{"port": 43117, "pid": 999999999}',
        '{"port": 0, "pid": 1}',
        '{"port": "43117", "pid": 1}',
        "not json",
        '{"port": 43117, "pid": 1, "pad": "' + "x" * 300 + '"}',
    ],
)
def test_a_beacon_of_a_gone_process_or_of_any_other_shape_names_nothing(tmp_path: Path, content: str) -> None:
    db = str(tmp_path / "proxy.db")
    Path(db + ".console").write_text(content)
    assert console_beacon.running_url(db) is None


def test_a_beacon_that_is_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    db = str(tmp_path / "proxy.db")
    target = tmp_path / "elsewhere"
    target.write_text(json.dumps({"port": PORT, "pid": os.getpid()}))
    os.symlink(target, db + ".console")
    assert console_beacon.running_url(db) is None
    console_beacon.write(db, PORT + 1)  # replaces the link, never writes through it
    assert json.loads(target.read_text())["port"] == PORT and not os.path.islink(db + ".console")
