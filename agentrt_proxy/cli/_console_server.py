"""The console's HTTP side: every request checked by ``console_guard`` before anything is read,
the pages built by ``console_pages`` from ``console_read``, a decision made through
``operator``'s own selection and hash binding (the code ``approve`` and ``reject`` run), and
the live update of the waiting approvals as server-sent events.

The database is opened per request (read-only, or a writer only for the moment of a decision),
as the operator's commands open it; a stream holds one read-only connection for its life.
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentrt_proxy.cli import _console_decide as console_decide
from agentrt_proxy.cli import _console_pages as pages
from agentrt_proxy.cli import _console_read as read
from agentrt_proxy.cli import _operator_frame as operator_frame
from agentrt_proxy.cli._console_assets import CSS, JS
from agentrt_proxy.cli._console_context import Console
from agentrt_proxy.cli._console_guard import SECURITY_HEADERS
from agentrt_proxy.store import APPROVAL_PENDING, NotFound, StoreError
from agentrt_proxy.text import console_text as T
from agentrt_proxy.text import escaping, operator_text
from agentrt_proxy.text.cli_text import program_invocation

POLL_SECONDS = 0.2  # the stream's look at the chain head: well inside the second promised
KEEPALIVE_SECONDS = 15.0
MAX_FORM_BYTES = 256 * 1024
STATIC = {"/static/console.css": ("text/css; charset=utf-8", CSS), "/static/console.js": ("text/javascript", JS)}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, address: tuple[str, int], console_of: Any) -> None:
        super().__init__(address, Handler)
        self.console: Console = console_of(self.server_address[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never a traceback; a browser that went away mid-answer is not an error."""
        err = sys.exc_info()[1]
        if isinstance(err, (BrokenPipeError, ConnectionResetError, TimeoutError)):
            return
        detail = escaping.clean(f"{type(err).__name__}: {err}", 500)
        sys.stderr.write(T.CONSOLE_REQUEST_FAILED.format(client=client_address[0], detail=detail) + "\n")


class Handler(BaseHTTPRequestHandler):
    server: Server
    server_version = "agentrt-proxy-console"
    timeout = 60  # a client that stops sending mid-request frees its thread
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the link and nothing a page did."""

    @property
    def console(self) -> Console:
        return self.server.console

    # ------------------------------------------------------------------ answering
    def _send(
        self,
        status: int,
        body: str,
        content_type: str = "text/html; charset=utf-8",
        extra: tuple[tuple[str, str], ...] = (),
    ) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        for name, value in (*SECURITY_HEADERS, *extra):
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _refuse(self, status: int, reason: str) -> None:
        self._send(status, pages.refused_page(reason))

    def _host_ok(self) -> bool:
        if self.console.guard.host_ok(self.headers.get("Host")):
            return True
        host = escaping.clean(self.headers.get("Host") or "", 200)
        self._refuse(421, T.REFUSED_HOST.format(host=host, expected=self.console.guard.hosts()[0]))
        return False

    def _session(self) -> tuple[str, str] | None:
        found = self.console.guard.session_of(self.headers.get("Cookie"))
        if found is None:
            self._refuse(403, T.REFUSED_NO_SESSION)
        return found

    # ------------------------------------------------------------------ GET
    def do_GET(self) -> None:
        if not self._host_ok():
            return
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if url.path == "/favicon.ico":
            self._send(204, "", "image/x-icon")
            return
        if url.path in STATIC:
            content_type, text = STATIC[url.path]
            self._send(200, text, content_type)
            return
        if url.path == "/" and "token" in query:
            self._exchange(query["token"])
            return
        session = self._session()
        if session is None:
            return
        try:
            self._route(url.path, query, session[1])
        except (operator_frame.OperatorError, StoreError) as err:
            self._send(
                503, pages.message_page(T.REFUSED_TITLE, [T.DB_TROUBLE.format(detail=escaping.sanitize(str(err)))])
            )

    def _exchange(self, token: str) -> None:
        found = self.console.guard.exchange(token)
        if found is None:
            self._refuse(403, T.REFUSED_TOKEN)
            return
        session, _ = found
        cookie = ("Set-Cookie", self.console.guard.set_cookie(session))
        if self.headers.get("Sec-Fetch-Site", "none") in ("none", "same-origin"):
            # 303 to the address without the token: it leaves the address bar and the history.
            self._send(303, "", extra=(("Location", "/"), cookie))
            return
        # Opened from another page (the local file the browser was started with): a redirect
        # would stay that page's navigation, and SameSite=Strict withholds the new cookie from
        # it; a refresh from this page of the console's own is same-site and carries it.
        self._send(200, pages.continue_page(), extra=(cookie,))

    def _route(self, path: str, query: dict[str, str], csrf: str) -> None:
        c = self.console
        if path == "/events":
            self._stream([i for i in query.get("shown", "").split(",") if i])
            return
        with operator_frame.opened(c.database, writer=False) as store:
            if path == "/":
                body = pages.approvals_page(read.waiting_cards(store), csrf)
            elif path in ("/approve", "/reject"):
                self._confirm(store, path[1:], query, csrf)
                return
            elif path == "/runs":
                self._runs(store, query)
                return
            elif path == "/run":
                self._run(store, query.get("id", ""))
                return
            elif path == "/budgets":
                body = pages.rows_page(T.BUDGETS_HEAD, T.BUDGETS_COLUMNS, read.budgets(store, c.config), T.BUDGETS_NONE)
            elif path == "/tasks":
                body = pages.rows_page(
                    T.TASKS_HEAD.format(session=escaping.clean(c.config.session, 200)),
                    T.TASKS_COLUMNS,
                    read.tasks(store, c.config.session),
                    T.TASKS_NONE,
                )
            elif path == "/tools":
                rows, trouble = read.refused_tools(c.config)
                changed = T.TOOLS_CHANGED.format(program=program_invocation(), config=c.config_path)
                now, cleared = read.withheld_now(store), read.withheld_cleared(store)
                body = pages.tools_page(now, cleared, read.CLEARED_SHOWN, rows, [*trouble, changed])
            elif path == "/verify":
                body = pages.verify_page(*read.verify_lines(store))
            else:
                self._send(404, pages.message_page(T.REFUSED_TITLE, [T.NOT_FOUND]))
                return
        self._send(200, body)

    def _confirm(self, store: Any, verb: str, query: dict[str, str], csrf: str) -> None:
        run_id, approval_id, shown = query.get("run", ""), query.get("approval", ""), query.get("hash", "")
        try:
            approval = store.get_approval(approval_id)
        except NotFound:
            approval = None
        if approval is None or approval.run_id != run_id:
            self._send(
                404,
                pages.message_page(
                    T.STALE_TITLE,
                    [
                        operator_text.OP_UNKNOWN_APPROVAL.format(
                            approval=escaping.clean(approval_id, 100), run=escaping.clean(run_id, 100)
                        )
                    ],
                ),
            )
            return
        if approval.status != APPROVAL_PENDING or approval.hash != shown:
            changed = approval.status == APPROVAL_PENDING
            detail = (operator_text.OP_CHANGED if changed else operator_text.OP_ALREADY).format(
                approval=approval.id, status=escaping.clean(approval.status, 40)
            )
            self._send(
                409,
                pages.message_page(
                    T.STALE_TITLE, [T.STALE.format(detail=detail), read.what_happened(approval)], "refused"
                ),
            )
            return
        self._send(200, pages.confirm_page(read.card(store, approval), verb, csrf))

    def _runs(self, store: Any, query: dict[str, str]) -> None:
        status = query.get("status", read.FILTER_ALL)
        day = query.get("day", "").strip()
        error = ""
        if day and not read.DAY.fullmatch(day):
            error, day = T.BAD_DAY.format(text=escaping.go_quote(escaping.clean(day, 40))), ""
        status = status if status in read.RUN_FILTERS else read.FILTER_ALL
        f = read.RunFilter(status, query.get("tool", "").strip(), day)
        rows, searched, total = read.runs(store, f)
        self._send(200, pages.runs_page(rows, f, searched, total, error))

    def _run(self, store: Any, run_id: str) -> None:
        try:
            lines, more = read.show_lines(store, os.path.abspath(self.console.database), run_id)
        except operator_frame.OperatorError as err:
            self._send(404, pages.message_page(T.REFUSED_TITLE, [str(err)]))
            return
        self._send(200, pages.run_page(escaping.clean(run_id, 100), lines, more))

    # ------------------------------------------------------------------ the live stream
    def _stream(self, shown: list[str]) -> None:
        c = self.console
        with operator_frame.opened(c.database, writer=False) as store:  # refused before a byte is sent
            watcher = read.PendingWatch(store, set(shown))
            self.send_response(200)
            for name, value in SECURITY_HEADERS:
                self.send_header(name, value)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.end_headers()
            last = time.monotonic()
            try:
                while not c.stopping.is_set():
                    change = watcher.poll()
                    if change is not None:
                        self.wfile.write(f"data: {json.dumps(change)}\n\n".encode())
                    elif time.monotonic() - last > KEEPALIVE_SECONDS:
                        self.wfile.write(b": still here\n\n")
                    else:
                        c.stopping.wait(POLL_SECONDS)
                        continue
                    self.wfile.flush()
                    last = time.monotonic()
                    c.stopping.wait(POLL_SECONDS)
            except (BrokenPipeError, ConnectionResetError):
                return  # the page was closed or reloaded
            except StoreError:
                return  # the database went away: the page's EventSource asks again, and is told why

    # ------------------------------------------------------------------ POST
    def do_POST(self) -> None:
        if not self._host_ok():
            return
        session = self._session()
        if session is None:
            return
        origin = self.headers.get("Origin")
        if not self.console.guard.origin_ok(origin):
            self._refuse(403, T.REFUSED_ORIGIN.format(origin=escaping.clean(origin or "", 200)))
            return
        form = self._form()
        if form is None:
            return
        if not self.console.guard.csrf_ok(session[1], form.get("csrf")):
            self._refuse(403, T.REFUSED_CSRF)
            return
        if urlsplit(self.path).path != "/decide":
            self._refuse(404, T.NOT_FOUND)
            return
        status, body = console_decide.decide(self.console, form, session[1])
        self._send(status, body)

    def _form(self) -> dict[str, str] | None:
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_FORM_BYTES:
            self._refuse(400, T.BAD_FORM.format(detail=T.BAD_LENGTH.format(limit=MAX_FORM_BYTES)))
            return None
        try:
            text = self.rfile.read(length).decode("utf-8")
            return {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True, strict_parsing=bool(text)).items()}
        except (UnicodeDecodeError, ValueError):
            self._refuse(400, T.BAD_FORM.format(detail=T.BAD_ENCODING))
            return None

    def _not_allowed(self) -> None:
        if self._host_ok():
            self._send(405, pages.refused_page(T.REFUSED_METHOD), extra=(("Allow", "GET, POST"),))

    do_PUT = do_DELETE = do_PATCH = _not_allowed

    def do_HEAD(self) -> None:
        self._not_allowed()
