"""What ``watch`` does with each change outside the screen: a JSON line for scripts, a
desktop notification (``-notify``), a command of the operator's (``-exec``).

Nothing here goes through a shell: every program is started with its argument vector, and a
model-chosen value reaches a notifier only as one argument, bounded and made safe.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from agentrt_proxy.canonical.encoder import go_json
from agentrt_proxy.cli import _console_beacon as console_beacon
from agentrt_proxy.cli._flags import UsageError
from agentrt_proxy.cli._watch_feed import CHANGE_WAITING, InboxChange, change_json
from agentrt_proxy.text import cli_text, escaping

NOTIFY_SECONDS = 10  # a notifier that hangs is left behind, never waited on past this


def notifier_for(platform: str, which: Callable[[str], str | None] = shutil.which) -> tuple[str, str | None]:
    """(the platform's notifier's name, its path or None when it is not installed)."""
    tool = "osascript" if platform == "darwin" else "notify-send" if platform.startswith("linux") else ""
    return tool, (which(tool) if tool else None)


def _applescript(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def notify_argv(tool: str, path: str, change: InboxChange, console_url: str | None = None) -> list[str]:
    """The notifier's argument vector: the tool and a short summary, never the arguments whole;
    the console's address (never its token) when a console runs for the same database."""
    fields = change_json(change, "")
    body = cli_text.WATCH_NOTIFY_BODY.format(
        tool=escaping.clean(fields["tool"], 60),
        kind=escaping.clean(fields["kind"], 40),
        summary=escaping.clean(fields["summary"], 80),
    )
    if console_url:
        body = cli_text.WATCH_NOTIFY_CONSOLE.format(body=body, url=console_url)
    if tool == "osascript":
        script = cli_text.WATCH_APPLESCRIPT.format(
            body=_applescript(body), title=_applescript(cli_text.WATCH_NOTIFY_TITLE)
        )
        return [path, "-e", script]
    return [path, "--app-name=agentrt-proxy", cli_text.WATCH_NOTIFY_TITLE, body]


def exec_env(change: InboxChange, database: str, base: dict[str, str]) -> dict[str, str]:
    """The approval's fields as AGENTRT_* variables beside the operator's environment."""
    fields = change_json(change, database)
    env = dict(base)
    for key in (
        "event",
        "approval_id",
        "run_id",
        "kind",
        "tool",
        "status",
        "summary",
        "created_at",
        "hash",
        "database",
        "expires_at",
    ):
        env[f"AGENTRT_{key.upper()}"] = escaping.sanitize(str(fields.get(key, "")))
    return env


@dataclass
class Outputs:
    """Where each change goes; the children started are reaped as the watch goes on."""

    database: str
    as_json: bool
    notify: bool
    command: list[str] | None
    base_env: dict[str, str]
    platform: str = sys.platform
    notifier: tuple[str, str | None] | None = None
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)
    say: Callable[[str], None] = field(default=lambda line: _stderr(line))

    def start(self) -> None:
        if self.notify:
            self.notifier = notifier_for(self.platform)
            tool, path = self.notifier
            if path is None:
                self.say(cli_text.WATCH_NO_NOTIFIER.format(tool=tool) if tool else cli_text.WATCH_NO_NOTIFIER_PLATFORM)

    def handle(self, change: InboxChange) -> None:
        if self.as_json:
            sys.stdout.write(go_json(change_json(change, self.database)) + "\n")
            sys.stdout.flush()
        if change.kind != CHANGE_WAITING:
            return
        if self.notifier is not None:
            tool, path = self.notifier
            if path is not None:
                self._spawn(notify_argv(tool, path, change, console_beacon.running_url(self.database)), None, tool)
        if self.command:
            self._spawn(self.command, exec_env(change, self.database, self.base_env), shlex.join(self.command))

    def _spawn(self, argv: list[str], env: dict[str, str] | None, name: str) -> None:
        try:
            self.children.append(
                subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL if not self.as_json else sys.stderr,
                )
            )
        except OSError as err:
            text = cli_text.WATCH_EXEC_FAILED if env is not None else cli_text.WATCH_NOTIFY_FAILED
            self.say(text.format(command=escaping.clean(name, 200), tool=name, detail=err.strerror or err))
        self.reap()

    def reap(self, wait: float = 0) -> None:
        alive = []
        for child in self.children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=wait) if wait else child.poll()
            if child.returncode is None:
                alive.append(child)
        self.children = alive


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def exec_command(text: str | None) -> list[str] | None:
    """-exec CMD split as a shell would split words, but never run by one."""
    if text is None:
        return None
    try:
        argv = shlex.split(text)
    except ValueError as err:
        raise UsageError(f"-exec: {err}") from None
    if not argv:
        raise UsageError(cli_text.WATCH_EXEC_EMPTY)
    return argv
