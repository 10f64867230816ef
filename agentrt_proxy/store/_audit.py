"""The audit record of a passed-through read: a ``resources/read`` or a ``prompts/get``; and of a
server's request relayed to the host (``sampling/createMessage``, ``elicitation/create``).

The event chain belongs to runs (``events.run_id`` references ``runs``), and the runtime's
operator tools read runs. So each read is a run of its own, written whole in one transaction:
inserted RUNNING, one ``passthrough.*`` event naming the server, the URI or prompt and the size
of the answer in bytes (never its content), and finished at once, COMPLETED when the server
answered with a result and FAILED otherwise. It uses only the moves the state table already
allows (new -> RUNNING -> terminal), holds no lease and has no step, so ``verify`` walks it as
any other link, ``runs`` lists it and ``show`` shows it; it is not in the proxy's call index, so
the rules across calls and ``recheck`` never meet it.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentrt_proxy.canonical.encoder import Raw
from agentrt_proxy.store._ids import new_id
from agentrt_proxy.store._states import COMPLETED, END_PASSTHROUGH, END_UPSTREAM_ERROR, FAILED, RUNNING
from agentrt_proxy.store._store import Store
from agentrt_proxy.text.record_text import GOAL_RELAYED

__all__ = ["PROMPT_GET", "RESOURCE_READ", "SERVER_REQUEST", "PassthroughRead", "record_passthrough"]

RESOURCE_READ = "passthrough.resource_read"
PROMPT_GET = "passthrough.prompt_get"
SERVER_REQUEST = "passthrough.server_request"  # a server's request relayed to the host (or refused)
_TARGET_KEY = {RESOURCE_READ: "uri", PROMPT_GET: "prompt", SERVER_REQUEST: "method"}
_METHOD = {RESOURCE_READ: "resources/read", PROMPT_GET: "prompts/get"}


@dataclass(frozen=True)
class PassthroughRead:
    """One read as the audit records it; ``error`` is empty when the server answered a result."""

    event: str  # RESOURCE_READ, PROMPT_GET or SERVER_REQUEST
    server: str
    target: str  # the URI read, the prompt's own name at its server, or the server's method
    size: int  # bytes of the answer (its result, or its error) as it came
    error: str = ""
    host_name: str = ""  # the name the host asked for, when it differs from target (a prompt)

    @property
    def goal(self) -> str:
        if self.event == SERVER_REQUEST:
            return GOAL_RELAYED.format(target=self.target, server=self.server)
        return f"{_METHOD[self.event]} {self.server} {self.target}"


def record_passthrough(store: Store, session: str, read: PassthroughRead, at: str) -> str:
    """Write ``read`` as a finished run of its own; its run id. Raises the store's errors."""
    run_id = f"{session}.{new_id()}"  # 80 random bits: never a lost race in practice
    payload: dict[str, object] = {"server": read.server, _TARGET_KEY[read.event]: read.target, "bytes": read.size}
    if read.host_name and read.host_name != read.target:
        payload["name"] = read.host_name
    if read.error:
        payload["error"] = read.error
    status = FAILED if read.error else COMPLETED
    reason = END_UPSTREAM_ERROR if read.error else END_PASSTHROUGH
    with store.write() as tx:
        tx.insert_run(run_id, read.goal, "{}", at, "", "")
        tx.append(run_id, "", at, "run.created", {"goal": read.goal, "limits": Raw("{}"), "tools": []})
        tx.append(run_id, "", at, read.event, payload)
        tx.update_run(run_id, expect=RUNNING, status=status, reason=reason, reason_detail=read.error, finished_at=at)
        tx.append(
            run_id, "", at, "run.finished", {"status": status, "reason": reason, "detail": read.error, "steps": 0}
        )
    return run_id
