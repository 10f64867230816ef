"""The per-server opt-in to resources and prompts (issue 13, item 11): strict booleans, off by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.config import ConfigError, load_config
from tests.config.test_config import compact, with_server, write


def load(path: Path, document: dict[str, Any]) -> Any:
    write(path, compact(document))
    return load_config(path)


def test_resources_and_prompts_are_off_unless_the_operator_opts_in(tmp_path: Path) -> None:
    (server,) = load(tmp_path / "proxy.json", with_server()).servers
    assert (server.resources, server.prompts, server.prompt_names) == (False, False, {})
    (server,) = load(tmp_path / "proxy.json", with_server(resources=True, prompts=True)).servers
    assert (server.resources, server.prompts) == (True, True)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"resources": "yes"}, "servers[0].resources must be true or false"),
        ({"prompts": 1}, "servers[0].prompts must be true or false"),
        ({"prompt_names": {"greet": "hello"}}, 'server "bank": prompt_names applies only with "prompts": true'),
        ({"prompts": True, "prompt_names": ["greet"]}, "prompt_names must be an object"),
        ({"prompts": True, "prompt_names": {"greet": "a b"}}, 'the name for "greet" must match'),
        ({"resource": True}, 'unknown field "resource"'),
    ],
)
def test_the_passthrough_fields_are_strict(tmp_path: Path, fields: dict[str, Any], message: str) -> None:
    path = tmp_path / "proxy.json"
    write(path, compact(with_server(**fields)))
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert message in str(refused.value) and str(path) in str(refused.value)


def test_prompt_names_rename_a_prompt_for_the_host(tmp_path: Path) -> None:
    (server,) = load(tmp_path / "proxy.json", with_server(prompts=True, prompt_names={"greet": "hello"})).servers
    assert server.prompt_names == {"greet": "hello"}
