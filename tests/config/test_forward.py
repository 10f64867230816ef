"""A server's ``forward``: which of its requests go to the host (issue 25, item 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.config import ConfigError, load_config
from tests.config.test_config import compact, with_server, write


def forward_of(tmp_path: Path, text: str) -> tuple[str, ...]:
    return load_config(write(tmp_path / "proxy.json", text)).servers[0].forward


@pytest.mark.parametrize(
    ("value", "loaded"),
    [
        (None, ()),
        ([], ()),
        (["sampling"], ("sampling",)),
        (["elicitation", "sampling"], ("elicitation", "sampling")),
    ],
)
def test_forward_names_sampling_elicitation_or_nothing(tmp_path: Path, value: Any, loaded: tuple[str, ...]) -> None:
    server = {} if value is None else {"forward": value}
    assert forward_of(tmp_path, compact(with_server(**server))) == loaded


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ('"sampling"', 'server "bank": forward must be an array of "elicitation" or "sampling"'),
        ('{"sampling": true}', 'server "bank": forward must be an array of "elicitation" or "sampling"'),
        ('["roots"]', 'server "bank": forward: "roots" is not one of "elicitation", "sampling"'),
        ('["Sampling"]', 'server "bank": forward: "Sampling" is not one of "elicitation", "sampling"'),
        ("[1]", 'server "bank": forward: 1 is not one of "elicitation", "sampling"'),
        ("[null]", 'server "bank": forward: null is not one of "elicitation", "sampling"'),
        ('["sampling", "sampling"]', 'server "bank": forward names "sampling" twice'),
    ],
)
def test_anything_else_is_refused_naming_the_server_and_the_field(tmp_path: Path, literal: str, message: str) -> None:
    text = compact(with_server(forward="PLACEHOLDER")).replace('"PLACEHOLDER"', literal)
    with pytest.raises(ConfigError) as info:
        forward_of(tmp_path, text)
    assert str(info.value).endswith(message), str(info.value)
