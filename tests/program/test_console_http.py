"""The console's defences over plain HTTP: the real ``console`` child, a database with one
payment-like approval waiting (``operator_fixtures.pause_run``), and http.client sending
exactly the Host, Origin, cookie and form each case needs. Every refusal is counted in the
database: the approvals, events, runs and steps tables are the same row for row afterwards.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_program
from tests.console_fixtures import Running, console, decision_form, request, signed_in, tables
from tests.operator_fixtures import pause_run
from tests.program.test_serve_process import write_config
from tests.program.test_watch import stub, wait_lines

pytestmark = [pytest.mark.program, pytest.mark.timeout(90)]


@pytest.fixture
def waiting_db(tmp_path: Path) -> tuple[Path, Path, str]:
    """(the configuration, its database, the waiting approval's id)."""
    config = write_config(tmp_path)
    _, approval_id = pause_run(tmp_path / "proxy.db", args='{"to":"nina","amount":12}')
    return config, tmp_path / "proxy.db", approval_id


@pytest.fixture
def running(
    waiting_db: tuple[Path, Path, str], program_argv: list[str], program_env: dict[str, str]
) -> Iterator[Running]:
    with console(program_argv, program_env, waiting_db[0]) as c:
        yield c


def status_of(db: Path, approval_id: str) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("SELECT status FROM approvals WHERE id = ?", (approval_id,)).fetchone()[0])
    finally:
        conn.close()


def test_a_request_without_the_session_is_refused_and_decides_nothing(
    running: Running, waiting_db: tuple[Path, Path, str]
) -> None:
    _, db, approval_id = waiting_db
    before = tables(db)
    page = request(running, "GET", "/")
    posted = request(running, "POST", "/decide", form=decision_form(db, approval_id))
    assert (page.status, posted.status) == (403, 403)
    assert "Open the link the console printed" in page.body and "Nothing was changed." in posted.body
    assert tables(db) == before


def test_the_link_works_once_and_a_wrong_token_opens_nothing(running: Running) -> None:
    wrong = request(running, "GET", "/?token=" + "A" * 43)
    assert wrong.status == 403 and "Set-Cookie" not in wrong.headers
    first = request(running, "GET", f"/?token={running.token}")
    assert first.status == 303 and first.headers["Location"] == "/"
    cookie = first.headers["Set-Cookie"]
    assert cookie.startswith(f"agentrt_console_{running.port}=")
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {part.strip() for part in cookie.split(";")}
    again = request(running, "GET", f"/?token={running.token}")
    assert again.status == 403 and "Set-Cookie" not in again.headers
    assert "already used" in again.body
    assert request(running, "GET", "/", headers={"Cookie": cookie.split(";")[0]}).status == 200


def test_a_request_naming_another_host_is_refused_even_with_the_session(
    running: Running, waiting_db: tuple[Path, Path, str]
) -> None:
    _, db, approval_id = waiting_db
    cookie, csrf = signed_in(running)
    before = tables(db)
    rebound = {"Host": f"evil.example:{running.port}", "Cookie": cookie}
    page = request(running, "GET", "/", headers=rebound)
    posted = request(running, "POST", "/decide", headers=rebound, form={**decision_form(db, approval_id), "csrf": csrf})
    assert (page.status, posted.status) == (421, 421)
    assert "evil.example" in page.body and approval_id not in page.body  # nothing of the database shown
    assert tables(db) == before


def test_a_cross_origin_post_is_refused_and_decides_nothing(
    running: Running, waiting_db: tuple[Path, Path, str]
) -> None:
    _, db, approval_id = waiting_db
    cookie, csrf = signed_in(running)
    before = tables(db)
    posted = request(
        running,
        "POST",
        "/decide",
        headers={"Cookie": cookie, "Origin": "http://evil.example"},
        form={**decision_form(db, approval_id), "csrf": csrf},
    )
    assert posted.status == 403 and "another site" in posted.body
    assert tables(db) == before


def test_a_post_without_the_sessions_csrf_token_is_refused_and_decides_nothing(
    running: Running, waiting_db: tuple[Path, Path, str]
) -> None:
    _, db, approval_id = waiting_db
    cookie, _ = signed_in(running)
    before = tables(db)
    for form in (decision_form(db, approval_id), {**decision_form(db, approval_id), "csrf": "not-the-token"}):
        posted = request(running, "POST", "/decide", headers={"Cookie": cookie, "Origin": running.origin}, form=form)
        assert posted.status == 403 and "did not carry this session" in posted.body
    assert tables(db) == before


def test_a_post_with_the_session_and_its_token_decides_once_recorded_as_from_the_console(
    running: Running, waiting_db: tuple[Path, Path, str]
) -> None:
    _, db, approval_id = waiting_db
    cookie, csrf = signed_in(running)
    headers = {"Cookie": cookie, "Origin": running.origin}
    form = {**decision_form(db, approval_id), "csrf": csrf}
    unconfirmed = request(running, "POST", "/decide", headers=headers, form={**form, "confirmed": ""})
    assert unconfirmed.status == 200 and status_of(db, approval_id) == "pending"  # it asks first
    done = request(running, "POST", "/decide", headers=headers, form=form)
    assert done.status == 200, done.body
    conn = sqlite3.connect(db)
    decided_by = conn.execute("SELECT decided_by FROM approvals WHERE id = ?", (approval_id,)).fetchone()[0]
    decisions = conn.execute("SELECT COUNT(*) FROM events WHERE type = 'approval.decided'").fetchone()[0]
    conn.close()
    assert (status_of(db, approval_id), decided_by, decisions) == ("approved", "tester (console)", 1)
    before = tables(db)
    twice = request(running, "POST", "/decide", headers=headers, form=form)
    assert twice.status == 409 and "already approved" in twice.body and "by tester (console)" in twice.body
    assert tables(db) == before


def test_every_page_carries_the_strict_policy_and_loads_nothing_from_outside(running: Running) -> None:
    cookie, _ = signed_in(running)
    for path in ("/", "/runs", "/budgets", "/tasks", "/tools", "/verify", "/static/console.js"):
        answer = request(running, "GET", path, headers={"Cookie": cookie})
        assert answer.status == 200, path
        csp = answer.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert answer.headers["X-Frame-Options"] == "DENY"
        if path != "/static/console.js":
            assert (
                "<script>" not in answer.body
                and " style=" not in answer.body
                and "//" not in answer.body.split("<body", 1)[1].replace("http://127.0.0.1", "")
            )


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_ends_an_open_stream_and_exits_0_removing_its_beacon(
    stop: signal.Signals, waiting_db: tuple[Path, Path, str], program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, db, _ = waiting_db
    with console(program_argv, program_env, config) as c:
        cookie, _ = signed_in(c)
        beacon = Path(f"{db}.console")
        assert beacon.exists() and c.token not in beacon.read_text() and oct(beacon.stat().st_mode)[-3:] == "600"
        conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=20)
        conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{c.port}", "Cookie": cookie})
        stream = conn.getresponse()
        assert stream.status == 200 and stream.fp is not None
        assert stream.fp.readline().startswith(b"data: ")  # the stream is open and has spoken
        c.process.send_signal(stop)
        assert c.process.wait(timeout=20) == 0
        assert stream.read() in (b"\n", b"")  # and it ended
        conn.close()
        assert not beacon.exists()


def test_any_address_but_loopback_and_a_port_out_of_range_are_refused(waiting_db: tuple[Path, Path, str]) -> None:
    config = str(waiting_db[0])
    for extra in (["-address", "0.0.0.0"], ["-address", "::"], ["-port", "70000"]):
        done = run_program(["console", "-config", config, "-no-browser", *extra], timeout=30)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        first, *hint = done.stderr.splitlines()
        assert first.startswith("agentrt-proxy: console: -") and hint[0].startswith("usage: ")  # one line, a hint


def test_no_browser_is_started_without_a_display_or_with_no_browser(
    tmp_path: Path, waiting_db: tuple[Path, Path, str], program_argv: list[str], program_env: dict[str, str]
) -> None:
    log = stub(tmp_path, "a-browser")
    browser = {"BROWSER": str(tmp_path / "bin" / "a-browser")}
    headless = {k: v for k, v in program_env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    for env, extra in (({**headless, **browser}, ()), ({**program_env, **browser, "DISPLAY": ":99"}, ("-no-browser",))):
        with console(program_argv, env, waiting_db[0], *extra, browser=True) as c:
            assert signed_in(c)  # it serves all the same
    assert not log.exists()


def test_a_port_in_use_or_a_missing_database_is_one_line_and_exit_1(
    tmp_path: Path, running: Running, waiting_db: tuple[Path, Path, str]
) -> None:
    taken = run_program(
        ["console", "-config", str(waiting_db[0]), "-no-browser", "-port", str(running.port)], timeout=30
    )
    (tmp_path / "empty").mkdir()
    missing = run_program(["console", "-config", str(write_config(tmp_path / "empty")), "-no-browser"], timeout=30)
    for done in (taken, missing):
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith("agentrt-proxy: console: ") and "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{running.port}" in taken.stderr


def test_malformed_requests_are_answered_and_the_console_goes_on_without_a_traceback(
    waiting_db: tuple[Path, Path, str], program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, db, approval_id = waiting_db
    before = tables(db)
    with console(program_argv, program_env, config) as c:
        cookie, csrf = signed_in(c)
        for raw in (b"\x16\x03\x01garbage\r\n\r\n", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n", b""):
            with socket.create_connection(("127.0.0.1", c.port), timeout=20) as s:
                s.sendall(raw)
                s.shutdown(socket.SHUT_WR)
                s.recv(65536)  # whatever it says (or nothing), it must not take the console down
        headers = {"Cookie": cookie, "Origin": c.origin, "Content-Type": "application/x-www-form-urlencoded"}
        conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=20)
        conn.putrequest("POST", "/decide", skip_host=True)
        for name, value in {"Host": f"127.0.0.1:{c.port}", **headers, "Content-Length": "999999999"}.items():
            conn.putheader(name, value)
        conn.endheaders()
        assert conn.getresponse().status == 400
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=20)
        conn.request(
            "POST",
            "/decide",
            body=b"csrf=" + csrf.encode() + b"&verb=\xff\xfe",
            headers={"Host": f"127.0.0.1:{c.port}", **headers},
        )
        assert conn.getresponse().status == 400  # not UTF-8: not a form
        conn.close()
        incomplete = request(c, "POST", "/decide", headers=headers, form={"csrf": csrf, "verb": "approve"})
        assert incomplete.status == 400 and "incomplete" in incomplete.body
        assert request(c, "GET", "/", headers={"Cookie": cookie}).status == 200  # still serving
        c.process.terminate()
        assert c.process.wait(timeout=20) == 0
        assert c.process.stderr is not None and "Traceback" not in c.process.stderr.read()
    assert tables(db) == before and approval_id


def test_the_console_listens_on_127_0_0_1_only(running: Running) -> None:
    listening = listening_sockets(running.process.pid)
    assert listening == {("0100007F", running.port)}, listening


def test_watch_notify_names_a_running_console_and_never_its_token(
    tmp_path: Path, waiting_db: tuple[Path, Path, str], program_argv: list[str], program_env: dict[str, str]
) -> None:
    config, db, _ = waiting_db
    log = stub(tmp_path, "notify-send")
    env = {**program_env, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    with console(program_argv, program_env, config) as c:
        watcher = subprocess.Popen(
            [*program_argv, "watch", "-db", str(db), "-json", "-notify"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        try:
            [line] = wait_lines(log, 1)
        finally:
            watcher.terminate()
            watcher.wait(timeout=10)
    assert f"decide at http://127.0.0.1:{c.port}/" in line and c.token not in line


# --------------------------------------------------------------------------- sockets


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    return inodes


def listening_sockets(pid: int) -> set[tuple[str, int]]:
    """(local address in /proc's hex, port) of every TCP socket in LISTEN state (0A) the process
    holds, and every UDP socket it holds, read from /proc/PID/fd and /proc/PID/net/{tcp,tcp6,udp,udp6}."""
    mine = _socket_inodes(pid)
    found = set()
    for table in ("tcp", "tcp6", "udp", "udp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if inode in mine and (state == "0A" or table.startswith("udp")):
                address, port = local.rsplit(":", 1)
                found.add((address, int(port, 16)))
    return found
