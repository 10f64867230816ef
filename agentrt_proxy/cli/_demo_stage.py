"""The demo's stage: how to start this same program again, the narration, the processes it leaves.

What ``cli.demo``'s steps stand on: ``Program`` (the single file or the source tree, as the demo
itself was started), the transcript's helpers, what the model was shown, the hand-written host
of the 2026-07-28 revision (``line_host``: no SDK has a task client yet), and the wait for every
process the demo started.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import zipimport
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrt_proxy.errors import AgentrtError
from agentrt_proxy.mcp.tasks_wire import TERMINAL
from agentrt_proxy.text import demo_text as words

STOP_GRACE_SECONDS = 15
SEEN_WIDTH = 120
LINE_WIDTH = 300  # a JSON line of the hand-written host, as the transcript shows it
ANSWER_SECONDS = 30
MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

# The fake bank run from the package's root, as Python statements (code, not words).
_FAKEBANK_CODE = "; ".join((
    "import sys",
    "sys.path.insert(0, {path!r})",
    "import runpy",
    "runpy.run_module('agentrt_proxy.testing.fakebank', run_name='__main__')",
))  # fmt: skip


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


def expect_seen(step: str, seen: Seen, prefix: str | tuple[str, ...], *, is_error: bool | None = None) -> None:
    """The model saw one of ``prefix`` (and an error or not, as ``is_error`` says), or the step failed."""
    prefixes = (prefix,) if isinstance(prefix, str) else prefix
    ok = any(seen.text.startswith(p) for p in prefixes)
    if ok and is_error is not None:
        ok = seen.is_error == is_error
    if not ok:
        wanted = " or ".join(prefixes) + ("" if is_error is None else f" (isError {str(is_error).lower()})")
        got = f"{'(isError) ' if seen.is_error else ''}{one_line(seen.text, 200)}"
        raise DemoFailure(words.model_saw_otherwise(step, wanted, got))


def result_text(task: dict[str, Any]) -> str:
    """The text blocks of a completed task's result (the extension's ``tasks/get`` carries it)."""
    result = task.get("result")
    blocks = result.get("content") if isinstance(result, dict) else None
    if not isinstance(blocks, list):
        return ""
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")


# --------------------------------------------------------------------------- processes


def run_child(program: Program, directory: Path, args: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
    """Run a subcommand of this same program in ``directory``, as a separate process."""
    try:
        return subprocess.run(
            [*program.argv, *args],
            cwd=directory,
            env=program.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise DemoFailure(words.command_too_slow(what, shlex.join(args))) from err


class LineHost:
    """A host of the 2026-07-28 revision that declared the tasks extension, by hand: a request is
    one JSON line to the proxy's stdin carrying the revision's ``_meta``; its answer is the line
    on stdout with the same id (notifications in between are skipped). Each exchange is printed."""

    def __init__(self, process: Any, step: str) -> None:
        import anyio.streams.buffered

        self.process = process
        self.step = step
        self._lines = anyio.streams.buffered.BufferedByteReceiveStream(process.stdout)
        self._ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any], *, show: bool = True) -> dict[str, Any]:
        import anyio

        request_id = next(self._ids)
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "demo-host", "version": "1"},
        }
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        if show:
            say(f"   host  → {one_line(compact(message), LINE_WIDTH)}")
        line = compact({**message, "params": {**params, "_meta": meta}}) + "\n"
        try:
            with anyio.fail_after(ANSWER_SECONDS):
                await self.process.stdin.send(line.encode())
                while True:
                    answer = json.loads(await self._lines.receive_until(b"\n", 64 * 1024 * 1024))
                    if isinstance(answer, dict) and answer.get("id") == request_id and "method" not in answer:
                        break
        except (TimeoutError, OSError, ValueError, anyio.EndOfStream, anyio.BrokenResourceError) as err:
            why = str(err) or type(err).__name__
            raise DemoFailure(words.no_answer_to(self.step, method, why)) from err
        if show:
            shown = {k: v for k, v in answer.items() if k != "jsonrpc"}
            if isinstance(shown.get("result"), dict):
                shown["result"] = {k: v for k, v in shown["result"].items() if k != "_meta"}
            say(f"   proxy → {one_line(compact(shown), LINE_WIDTH)}")
        if "result" not in answer or not isinstance(answer["result"], dict):
            raise DemoFailure(words.answered_with_error(self.step, method, one_line(compact(answer))))
        result: dict[str, Any] = answer["result"]
        return result

    async def until_terminal(self, task_id: str) -> dict[str, Any]:
        """Poll ``tasks/get`` as a host does, quietly, until the task ends; print that answer."""
        import anyio

        with anyio.move_on_after(ANSWER_SECONDS):
            while True:
                task = await self.request("tasks/get", {"taskId": task_id}, show=False)
                if task.get("status") in TERMINAL:
                    return await self.request("tasks/get", {"taskId": task_id})
                await anyio.sleep(0.2)
        raise DemoFailure(words.task_did_not_end(self.step, ANSWER_SECONDS))


@contextlib.asynccontextmanager
async def line_host(program: Program, config: Path, stderr: Path, step: str) -> AsyncIterator[LineHost]:
    """``serve -config`` as a child of the demo, with the hand-written modern host on its pipes; at
    the end its stdin is closed and it exits as a host's proxy does."""
    import anyio

    with stderr.open("wb") as log:
        process = await anyio.open_process(
            [*program.argv, "serve", "-config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=str(config.parent),
            env=program.env(),
        )
    try:
        yield LineHost(process, step)
    finally:
        with anyio.CancelScope(shield=True):
            if process.stdin is not None:
                await process.stdin.aclose()
            with anyio.move_on_after(STOP_GRACE_SECONDS):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


# --------------------------------------------------------------------------- what the demo leaves


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
        raise DemoFailure(words.still_running(left))


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
    raise DemoFailure(words.server_not_found(step))
