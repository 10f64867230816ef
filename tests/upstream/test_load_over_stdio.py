"""Load and a loaded tool against a real stdio server (``fixtures/scripted_server.py``): an answer
that asks for input is a named refusal, and a listing that never answers fails the load inside the
connect timeout (proxy-and-mcp-module §5.10 #11, §5.13 #5).

Each test names the original Go test it covers.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentrt_proxy.config import load_config
from agentrt_proxy.mcp import ConnectError
from agentrt_proxy.upstream import LoadError, OpenError, is_known_answer, load, open_servers, read_manifest
from agentrt_proxy.upstream import _servers as servers
from tests.upstream.scripted import OBJECT, run_check, run_pin, scripted_config, tools_text, write_script

# ------------------------------------------------- proxy-and-mcp-module §5.10 #11: a loaded tool refuses input requests


def test_a_loaded_tool_answered_with_an_input_request_returns_the_named_refusal(tmp_path: Path) -> None:
    # TestCall_InputRequiredIsRefused (LoadedTool.call itself, over stdio)
    asking = {
        "resultType": "input_required",
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}}},
        "requestState": "opaque",
    }
    script = write_script(
        tmp_path / "script.json", tools=tools_text(("write_file", OBJECT)), calls={"write_file": json.dumps(asking)}
    )
    config_path = scripted_config(tmp_path, script, {"write_file": {"side_effect": "local_mutation"}})
    assert run_pin(config_path)[0] == 0

    async def scenario() -> Any:
        opened = await open_servers(load_config(config_path))
        try:
            tool = opened.by_name()["fs_write_file"]
            return tool, await tool.call('{"path":"a"}')
        finally:
            await opened.aclose()

    tool, out = anyio.run(scenario)
    assert out.is_error
    assert out.error_text == "fs_write_file: the server asked for more input, which this adapter does not support"
    assert is_known_answer(tool, out.error_text)  # an answer, not silence: never re-run as unknown


# ---------------------------------------------------- proxy-and-mcp-module §5.13 #5: Load times out on a silent listing


def test_load_fails_on_a_listing_that_never_answers_naming_the_step_and_the_bound_with_no_report(
    tmp_path: Path,
) -> None:
    # TestServer_ConnectTimeoutBoundsAListingThatNeverAnswers (the Load half). The original used 50 ms;
    # 1 s keeps the meaning (the listing, not the start, is what times out) on a loaded 2-core machine.
    script = tmp_path / "script.json"
    write_script(script, tools=tools_text(("read_file", OBJECT)))
    config_path = scripted_config(tmp_path, script, {"read_file": {"side_effect": "read_only"}}, connect_timeout="1s")
    assert run_pin(config_path)[0] == 0
    write_script(script, list="silent")
    config = load_config(config_path)
    server = config.servers[0]
    manifest = read_manifest(server.manifest)

    started = time.monotonic()
    with pytest.raises(ConnectError) as caught:
        anyio.run(lambda: load(server, manifest, servers.default_connector(server), repeat_window=0))
    assert str(caught.value).startswith('mcp: server "fs": list tools: timed out after 1s')
    assert not isinstance(caught.value, LoadError)  # so it carries no report
    assert time.monotonic() - started < 6

    with pytest.raises(OpenError) as opened:
        anyio.run(lambda: open_servers(config))
    assert str(opened.value).startswith('mcp: server "fs": list tools: timed out after 1s')
    assert opened.value.reports == []

    code, out, err = run_check(config_path)
    assert code == 1 and out == ""
    # check names the server that is down (serving would offer its tools from the manifest and retry)
    assert err.startswith('agentrt-proxy: error: server "fs" is down: mcp: server "fs": list tools: timed out after 1s')
