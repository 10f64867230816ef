"""The console as an operator starts it: ``console -config FILE -no-browser`` as a child
process, its one printed link read from standard output; and a plain HTTP client that can send
any Host, Origin and cookie it is told to (http.client, so nothing is added behind the test's back).
"""

from __future__ import annotations

import http.client
import re
import sqlite3
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

LINK = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]+)")


@dataclass
class Running:
    process: subprocess.Popen[str]
    url: str
    port: int
    token: str

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def console(
    argv: list[str], env: Mapping[str, str], config: Path, *extra: str, browser: bool = False
) -> Iterator[Running]:
    """The console child; ``browser``: without -no-browser (the environment says what opens)."""
    process = subprocess.Popen(
        [*argv, "console", "-config", str(config), *([] if browser else ["-no-browser"]), "-by", "tester", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=dict(env),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = LINK.search(line)
        assert found, (line, process.stderr.read() if process.poll() is not None and process.stderr else "")
        yield Running(process, found.group(0), int(found.group(1)), found.group(2))
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=20)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: str


def request(
    c: Running,
    method: str,
    path: str,
    *,
    headers: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=20)
    try:
        sent = {"Host": f"127.0.0.1:{c.port}", **(headers or {})}
        body = urlencode(dict(form)) if form is not None else None
        if body is not None:
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body, headers=sent)
        reply = conn.getresponse()
        return Answer(reply.status, reply.headers, reply.read().decode())
    finally:
        conn.close()


def signed_in(c: Running) -> tuple[str, str]:
    """Exchange the link for a session: (the Cookie header to send, the page's CSRF token)."""
    answer = request(c, "GET", urlsplit(c.url).path + "?" + urlsplit(c.url).query)
    assert answer.status == 303, answer
    cookie = answer.headers["Set-Cookie"].split(";", 1)[0]
    page = request(c, "GET", "/", headers={"Cookie": cookie})
    found = re.search(r'name="csrf" value="([^"]+)"', page.body)
    assert found, page.body
    return cookie, found.group(1)


def decision_form(db: Path, approval_id: str, verb: str = "approve", note: str = "") -> dict[str, str]:
    """What the page's form posts for ``approval_id``, read from the row as the page shows it."""
    conn = sqlite3.connect(db)
    try:
        run_id, hash_ = conn.execute("SELECT run_id, hash FROM approvals WHERE id = ?", (approval_id,)).fetchone()
    finally:
        conn.close()
    form = {"verb": verb, "run": run_id, "approval": approval_id, "hash": hash_, "confirmed": "yes"}
    if note:
        form["note"] = note
    return form


def tables(db: Path) -> tuple[list[tuple[object, ...]], ...]:
    """Every row the operator's decisions change: approvals, events, runs, steps."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(
            conn.execute(f"SELECT * FROM {name} ORDER BY rowid").fetchall()
            for name in ("approvals", "events", "runs", "steps")
        )
    finally:
        conn.close()
