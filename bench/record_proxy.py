"""The proxy's wire with its gate replaced by the straight-line record: the floor of any gated
proxy in Python, for the benchmark only.

``python record_proxy.py PYZ serve -config FILE`` runs the .pyz's ``serve`` as ``passthrough.py``
does (each ``tools/call`` forwarded straight to the upstream tool), except that around each call
it writes what ``record_floor.py`` writes for an allowed call, on the event loop as ``serve``
does: the rules' read and the call's start in one durable commit before the request goes out,
its outcome in a second durable commit before the host hears the answer (the real result's JSON
text recorded and hashed). Nothing else of the gate: no rules, no policy, no validation, no
sessions, no group commit (each call commits alone). The rows go to ``floor.db`` beside the
config file and verify (``record_floor.py``'s own check).

What this chain adds over ``passthrough`` is what the seed's record alone costs written in
Python with nothing around it: a gate that still checks what the gate checks cannot add less.
Never a way to run the proxy: it gates nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main() -> int:
    pyz = sys.argv[1]
    sys.argv = [pyz, *sys.argv[2:]]
    sys.path.insert(0, pyz)
    import agentrt_proxy  # noqa: F401  (from the .pyz, before record_floor puts the tree on the path)

    sys.path.insert(1, str(Path(__file__).resolve().parent))
    import record_floor as floor

    from agentrt_proxy.cli.main import main as cli_main
    from agentrt_proxy.mcp.outcomes import Result
    from agentrt_proxy.proxy import _answers as answers
    from agentrt_proxy.proxy import _runtime as runtime

    config = Path(sys.argv[sys.argv.index("-config") + 1]) if "-config" in sys.argv else Path(".")
    recorders: list[floor.Recorder] = []
    seen: dict[str, int] = {}  # how many times each arguments text was recorded (a repeat runs again)

    def recorder() -> floor.Recorder:  # opened at the first call: serve's own start stays as it is
        if not recorders:
            recorders.append(floor.open_recorder(str(config.parent / "floor.db")))
        return recorders[0]

    async def call(self: Any, name: str, arguments_text: str | None, ctx: Any) -> dict[str, Any]:
        record = recorder()
        again = seen.get(arguments_text or "", 0)
        seen[arguments_text or ""] = again + 1
        started = record.start(json.loads(arguments_text or "{}"), again)
        outcome = await self.tools[name].call(arguments_text)
        if not isinstance(outcome, Result):
            raise RuntimeError(f"record_proxy: {name}: {outcome}")
        record.finish(started, json.dumps(outcome.content, separators=(",", ":")), outcome.summary)
        return answers.tool_result(outcome.content, outcome.form)

    runtime.Runtime.call = call  # type: ignore[method-assign]
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
