"""The demo's stage: how to start this same program again, the narration, the processes it leaves.

What ``cli.demo``'s steps stand on: ``Program`` (the single file or the source tree, as the demo
itself was started), the transcript's helpers, what the model was shown, and the wait for every
process the demo started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
import time
import zipimport
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrt_proxy.errors import AgentrtError

STOP_GRACE_SECONDS = 15
SEEN_WIDTH = 120

_FAKEBANK_CODE = (
    "import sys; sys.path.insert(0, {path!r}); import runpy; "
    "runpy.run_module('agentrt_proxy.testing.fakebank', run_name='__main__')"
)


class DemoFailure(AgentrtError):
    """A step did not behave as narrated: the message says which, and what came back."""


# --------------------------------------------------------------------------- the program


@dataclass(frozen=True)
class Program:
    """How to start this same program again, in a child process."""

    argv: tuple[str, ...]  # the prefix: append the subcommand and its arguments
    package_root: str  # the zip, or the directory holding the agentrt_proxy package
    from_zip: bool
    shown: str  # how the transcript names it

    def env(self) -> dict[str, str]:
        """The environment for a child started with ``argv`` (the source tree on the path)."""
        env = dict(os.environ)
        if not self.from_zip:
            inherited = env.get("PYTHONPATH")
            env["PYTHONPATH"] = os.pathsep.join(p for p in (self.package_root, inherited) if p)
        return env

    def extra_env_entries(self) -> list[str]:
        """The same, as ``NAME=value`` entries for an MCP client that passes a bare environment."""
        return [] if self.from_zip else [f"PYTHONPATH={self.package_root}"]

    def fakebank_command(self) -> list[str]:
        """A command that runs the bundled fake server, from the zip or the source tree alike."""
        return [sys.executable, "-I", "-c", _FAKEBANK_CODE.format(path=self.package_root)]


def this_program() -> Program:
    """The program the demo runs from: the single file when the package came from a zip."""
    import agentrt_proxy

    spec = agentrt_proxy.__spec__
    loader = spec.loader if spec is not None else None
    if isinstance(loader, zipimport.zipimporter):
        archive = os.path.abspath(loader.archive)
        return Program((sys.executable, "-I", archive), archive, True, f"python3 {shlex.quote(archive)}")
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0.endswith(".pyz") and os.path.isfile(argv0):  # a zip someone unpacked oddly
        archive = os.path.abspath(argv0)
        return Program((sys.executable, "-I", archive), archive, True, f"python3 {shlex.quote(archive)}")
    root = str(Path(agentrt_proxy.__file__).resolve().parent.parent)
    return Program((sys.executable, "-m", "agentrt_proxy"), root, False, "python3 -m agentrt_proxy")


# --------------------------------------------------------------------------- narration


def say(text: str = "") -> None:
    print(text, flush=True)


def one_line(text: str, width: int = SEEN_WIDTH) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def indented(text: str, prefix: str = "   ") -> None:
    for line in text.rstrip("\n").splitlines():
        say(prefix + line)


def compact(args: dict[str, Any]) -> str:
    return json.dumps(args, separators=(",", ":"), ensure_ascii=False)


def readable_json(value: Any, indent: str = "", width: int = 100) -> str:
    """JSON indented by two spaces, with every object or array that fits ``width`` on one line."""
    flat = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if not isinstance(value, dict | list) or len(indent) + len(flat) <= width or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {readable_json(v, inner, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [inner + readable_json(v, inner, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


# --------------------------------------------------------------------------- the demo


@dataclass
class Seen:
    """What the model was given for one call."""

    text: str
    is_error: bool

    @property
    def prefix(self) -> str:
        head = self.text.split(":", 1)[0]
        return head if head.isupper() else ""


# --------------------------------------------------------------------------- processes


def _leftovers(directory: Path) -> list[int]:
    """Processes still running that this demo started (Linux: read from /proc; else none known)."""
    proc = Path("/proc")
    if not sys.platform.startswith("linux") or not proc.is_dir():
        return []
    marks = [str(directory).encode()]
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + b"\0" + (entry / "environ").read_bytes()
        except OSError:
            continue
        if any(mark in blob for mark in marks):
            found.append(int(entry.name))
    return found


def stop_everything(directory: Path) -> None:
    """Wait for the demo's processes to exit; kill any left after the grace period."""
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    left = _leftovers(directory)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _leftovers(directory)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _leftovers(directory)
    if left:
        raise DemoFailure(f"processes the demo started are still running: {', '.join(map(str, left))}")


def first_failure(exc: BaseException) -> DemoFailure | None:
    """The demo's own failure, also inside an exception group (a step that failed inside a
    connection's task group), however deep."""
    if isinstance(exc, DemoFailure):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = first_failure(inner)
        if found is not None:
            return found
    return None


def alive(pid: int) -> bool:
    """Running and not a zombie (the proxy reaps its server when it sees it end)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def child_with_env(parent: int, marker: str, step: str) -> int:
    """The process id of ``parent``'s child whose environment holds ``marker`` (NAME=value)."""
    wanted = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                its_parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if its_parent == parent and wanted in environ:
            return int(entry)
    raise DemoFailure(f"{step}: the proxy's payment server cannot be found (/proc is needed)")
