"""Who may use the console: the holder of the printed link, from this console's own pages.

The link carries a one-time token; its first use is exchanged for a session cookie and the
token is spent, so the link in a terminal's scrollback, a shell history or a browser's history
opens nothing afterwards. The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict``
(no other site's page sends it) and named for the port (cookies are not port-scoped: two
consoles on one machine must not read each other's). Every request must name the console's own
loopback address in ``Host`` (a DNS-rebinding page names its own host); every state-changing
request must carry the session's CSRF token and, when the browser sends an ``Origin``, this
console's. Pure: no sockets here, so each rule is a table-driven test.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

LOOPBACK = "127.0.0.1"
TOKEN_BYTES = 32


@dataclass
class Guard:
    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(TOKEN_BYTES))
    spent: bool = False
    sessions: dict[str, str] = field(default_factory=dict)  # session id -> its CSRF token
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def cookie_name(self) -> str:
        return f"agentrt_console_{self.port}"

    @property
    def origin(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def url(self, with_token: bool = True) -> str:
        return f"{self.origin}/?token={self.token}" if with_token else f"{self.origin}/"

    def hosts(self) -> tuple[str, ...]:
        return (f"{LOOPBACK}:{self.port}", f"localhost:{self.port}")

    def host_ok(self, host: str | None) -> bool:
        """The Host header names this console: a rebound name (evil.example:PORT) does not."""
        return host is not None and host.lower() in self.hosts()

    def origin_ok(self, origin: str | None) -> bool:
        """No Origin (a plain form from an old browser) or this console's own."""
        if origin is None:
            return True
        return origin.lower() in tuple(f"http://{h}" for h in self.hosts())

    def exchange(self, token: str) -> tuple[str, str] | None:
        """The one-time token for a new session: (session id, CSRF token), or None when the
        token is wrong or already spent."""
        with self.lock:
            if self.spent or not hmac.compare_digest(token.encode(), self.token.encode()):
                return None
            self.spent = True
            session, csrf = secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES)
            self.sessions[session] = csrf
            return session, csrf

    def session_of(self, cookie_header: str | None) -> tuple[str, str] | None:
        """(session id, CSRF token) named by the request's cookie, or None."""
        if not cookie_header:
            return None
        try:
            jar = SimpleCookie(cookie_header)
        except CookieError:
            return None
        morsel = jar.get(self.cookie_name)
        if morsel is None:
            return None
        with self.lock:
            for session, csrf in self.sessions.items():
                if hmac.compare_digest(session.encode(), morsel.value.encode()):
                    return session, csrf
        return None

    def csrf_ok(self, csrf: str, sent: str | None) -> bool:
        return sent is not None and hmac.compare_digest(csrf.encode(), sent.encode())

    def set_cookie(self, session: str) -> str:
        return f"{self.cookie_name}={session}; HttpOnly; SameSite=Strict; Path=/"


# Served with every answer: nothing from outside, no inline script, no framing, no referrer to
# another site ("same-origin", not "no-referrer": under that Chromium sends ``Origin: null`` with
# the console's own forms, which the Origin check would then refuse).
SECURITY_HEADERS = (
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)
