"""Starting a stdio server's process, and starting them early (decision 0007).

Stdlib only, and importable without the rest of ``mcp`` or anyio: ``serve`` starts every
stdio server with ``start_early`` right after the configuration's checks, before the
event loop and the protocol code are imported, and the stdio transport adopts the
running process with ``adopt``. A process started early and never adopted (a later
check or the start-up failed, the host left first) is killed with its process group by
``kill_unadopted``.

The child gets only the environment it is given (``spec.child_env``), runs in a process
group of its own (so a terminal's Ctrl-C reaches the proxy, not the server, and close can
kill its descendants too), and on Linux receives SIGKILL if the proxy dies first.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentrt_proxy.mcp.errors import ServerSpecError
from agentrt_proxy.mcp.spec import ServerSpec, child_env

__all__ = ["adopt", "kill_group", "kill_unadopted", "parent_death_hook", "spawn", "start_early"]

PR_SET_PDEATHSIG = 1

# server name -> (command, environment, the running process); filled by start_early
_early: dict[str, tuple[tuple[str, ...], dict[str, str], subprocess.Popen[bytes]]] = {}


def parent_death_hook() -> Callable[[], None] | None:
    """A ``preexec_fn`` setting PR_SET_PDEATHSIG=SIGKILL, or ``None`` off Linux.

    Done with ``ctypes`` (stdlib, so it works from a zip app). libc is loaded here,
    in the parent: the child only makes the one system call between fork and exec.
    The signal fires when the *thread* that forked exits: the proxy's main thread,
    which both starts the servers early and runs the event loop.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the proxy died before the call took effect
            os._exit(1)

    return hook


def spawn(command: Sequence[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start one stdio server: three pipes, its own session and group, the parent-death signal.

    Raises what ``subprocess.Popen`` raises (``OSError``, ``ValueError``, ``IndexError``).
    """
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        preexec_fn=parent_death_hook(),
    )


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process's group (descendants too), reap it and close its pipes."""
    signal_group(proc.pid, signal.SIGKILL)
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def start_early(servers: Iterable[Any]) -> None:
    """Start every stdio server of ``servers`` (``config.ServerConfig``) now, to be adopted.

    Only after the configuration's checks (the reach check among them): a server it
    refuses must never run. A server whose entry or start fails is left alone here;
    its transport starts it again later and reports the failure as it always did.
    """
    for server in servers:
        if not server.command or server.name in _early:
            continue
        spec = ServerSpec(
            name=server.name,
            command=tuple(server.command),
            endpoint=server.endpoint,
            env=tuple(server.env),
            inherit_env=tuple(server.inherit_env),
        )
        try:
            spec.validate()
            env = child_env(spec)
            proc = spawn(spec.command, env)
        except (ServerSpecError, OSError, ValueError, IndexError):
            continue
        _early[server.name] = (tuple(spec.command), env, proc)


def adopt(server: str, command: Sequence[str], env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """The process started early for exactly this server, command and environment, now the
    caller's to close; ``None`` when there is none."""
    entry = _early.get(server)
    if entry is None or entry[0] != tuple(command) or entry[1] != env:
        return None
    del _early[server]
    return entry[2]


def kill_unadopted() -> None:
    """Kill every process started early and not adopted (its whole group); safe twice."""
    while _early:
        _, (_, _, proc) = _early.popitem()
        kill_group(proc)
