"""A modern-era `resultType: "input_required"` answer (MRTR) is a refusal, not a result.

The proxy never answers a server's input requests, so the call is classified
`mcp.InputRequired` (a `Refused` whose reason is the text the tools layer records as
`<name>: the server asked for more input, which this adapter does not support`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentrt_proxy.mcp import INPUT_REQUIRED, InputRequired, ServerSpec, map_result, open_connection
from agentrt_proxy.mcp.outcomes import Refused, Result
from agentrt_proxy.upstream import known_answer_pattern

RAW = str(Path(__file__).resolve().parents[1] / "fixtures" / "raw_server.py")
SECOND = 1_000_000_000
ASKING = {
    "resultType": "input_required",
    "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}},
    "requestState": "opaque",
}


def test_an_input_required_result_maps_to_the_refusal() -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": 3, "result": ASKING})
    out = map_result("fs", "write_file", ASKING, text, 65536)
    assert isinstance(out, InputRequired) and isinstance(out, Refused)
    assert out.reason == INPUT_REQUIRED == "the server asked for more input, which this adapter does not support"
    assert out.raw == text.encode()
    assert known_answer_pattern("fs", "write_file", "fs_write_file").match(f"fs_write_file: {out.reason}")


def test_a_complete_result_type_is_an_ordinary_result() -> None:
    result = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}
    out = map_result("fs", "t", result, json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}), 65536)
    assert isinstance(out, Result) and out.text == "done"


@pytest.mark.anyio
async def test_a_server_asking_for_input_gets_the_refusal_over_the_wire() -> None:
    spec = ServerSpec(name="fs", command=[sys.executable, RAW], env=[f"RAW_RESULT={json.dumps(ASKING)}"])
    async with open_connection(spec, timeout_ns=10 * SECOND) as conn:
        out = await conn.call_tool("raw", "{}", 5 * SECOND)
    assert isinstance(out, InputRequired) and out.reason == INPUT_REQUIRED
    assert json.loads(out.raw)["result"] == ASKING
