"""``max_result_bytes``: the bound on a tool's result as recorded and answered (decision 0015; never a cut)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrt_proxy.config import DEFAULT_MAX_RESULT_BYTES, ConfigError, load_config
from agentrt_proxy.mcp import DEFAULT_MAX_CONTENT_BYTES
from tests.config.test_config import compact, minimal, write


def loaded(tmp_path: Path, text: str) -> int:
    return load_config(write(tmp_path / "proxy.json", text)).max_result_bytes


def test_the_default_is_thirty_two_mebibytes_and_the_wires_default_is_the_same(tmp_path: Path) -> None:
    assert loaded(tmp_path, compact(minimal())) == DEFAULT_MAX_RESULT_BYTES == 32 * 1024 * 1024
    assert DEFAULT_MAX_CONTENT_BYTES == DEFAULT_MAX_RESULT_BYTES  # a connection opened without a configuration


@pytest.mark.parametrize("value", [1024, 65536, 8388608, 134217728])
def test_a_whole_number_of_bytes_in_range_is_taken(tmp_path: Path, value: int) -> None:
    assert loaded(tmp_path, compact(minimal(max_result_bytes=value))) == value


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ('"8MiB"', "max_result_bytes must be a whole number of bytes"),
        ("1.5e6", "max_result_bytes must be a whole number of bytes"),
        ("true", "max_result_bytes must be a whole number of bytes"),
        ("1023", "max_result_bytes 1023 is not between 1024 and 134217728 (128 MiB)"),
        ("0", "max_result_bytes 0 is not between 1024 and 134217728 (128 MiB)"),
        ("-1", "max_result_bytes -1 is not between 1024 and 134217728 (128 MiB)"),
        ("134217729", "max_result_bytes 134217729 is not between 1024 and 134217728 (128 MiB)"),
    ],
)
def test_anything_else_is_refused_naming_the_field(tmp_path: Path, literal: str, message: str) -> None:
    text = compact(minimal()).replace('{"database"', '{"max_result_bytes":' + literal + ',"database"', 1)
    with pytest.raises(ConfigError) as err:
        loaded(tmp_path, text)
    assert str(err.value) == f"config {tmp_path / 'proxy.json'}: {message}"


def test_a_repeated_max_result_bytes_is_refused(tmp_path: Path) -> None:
    text = compact(minimal()).replace('{"database"', '{"max_result_bytes":2048,"max_result_bytes":4096,"database"', 1)
    with pytest.raises(ConfigError, match="duplicate key"):
        loaded(tmp_path, text)
