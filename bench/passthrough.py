"""The proxy with its gate taken out: the floor of its wire, for the benchmark only.

``python passthrough.py PYZ serve -config FILE`` runs the .pyz's ``serve`` exactly as a
host would, except that ``Runtime.call`` forwards each ``tools/call`` straight to the
upstream tool and answers its result: no request key, no rules, no records, no commits.
What this chain adds over the direct path is what the proxy's two JSON-RPC sessions, the
pipes and the upstream client cost; what ``agentrt`` adds over this chain is the gate's.
Never a way to run the proxy: it records nothing.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> int:
    pyz = sys.argv[1]
    sys.argv = [pyz, *sys.argv[2:]]
    sys.path.insert(0, pyz)
    from agentrt_proxy.cli.main import main as cli_main
    from agentrt_proxy.mcp.outcomes import Result
    from agentrt_proxy.proxy import _answers as answers
    from agentrt_proxy.proxy import _runtime as runtime

    async def call(self: Any, name: str, arguments_text: str | None, ctx: Any) -> dict[str, Any]:
        outcome = await self.tools[name].call(arguments_text)
        if not isinstance(outcome, Result):
            raise RuntimeError(f"passthrough: {name}: {outcome}")
        return answers.tool_result(outcome.content, outcome.form)

    runtime.Runtime.call = call  # type: ignore[method-assign]
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
