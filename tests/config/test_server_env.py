"""Configuration as hosts write it (issue 13, item 12): ``env`` as an object, ``${env:NAME}`` in
``env`` and ``headers`` values, and the top-level ``max_message_bytes`` (item 6).

Every refusal names the file, the server and the field; a header's value is never quoted, not
even when it came from the environment.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy.config import ConfigError, check_reach, load_config
from agentrt_proxy.config.model import DEFAULT_MAX_MESSAGE_BYTES
from agentrt_proxy.mcp.spec import ServerSpec, child_env
from tests.config.test_config import MINIMAL, write

HTTP: dict[str, Any] = {
    "name": "web",
    "endpoint": "http://127.0.0.1:9/mcp",
    "manifest": "w.json",
    "rules": {"pay": {"side_effect": "remote_mutation"}},
}
SECRET = "s3cr3t-token-value"


def configuration(tmp_path: Path, server: dict[str, Any] | None = None, **top: Any) -> Path:
    value = copy.deepcopy(MINIMAL)
    if server is not None:
        value["servers"] = [server]
    value.update(top)
    return write(tmp_path / "proxy.json", json.dumps(value))


def stdio(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(MINIMAL["servers"][0]), **changes}


def refusal(path: Path, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=environ or {})
    message = str(caught.value)
    assert str(path) in message
    return message


# ------------------------------------------------------------------------- env as an object


def test_env_as_an_object_reaches_the_server_as_the_array_form_does(tmp_path: Path) -> None:
    as_object = load_config(configuration(tmp_path, stdio(env={"MODE": "test", "EMPTY": ""})), environ={})
    (server,) = as_object.servers
    assert server.env == ("MODE=test", "EMPTY=")
    as_array = load_config(configuration(tmp_path, stdio(env=["MODE=test", "EMPTY="])), environ={})
    assert as_array.servers[0].env == server.env
    spec = ServerSpec(name="bank", command=("x",), env=server.env)
    environment = child_env(spec, {"PATH": "/bin", "MODE": "from the proxy"})
    assert environment == {"PATH": "/bin", "MODE": "test", "EMPTY": ""}


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"A=B": "x"}, ['server "bank": env: "A=B" is not a variable name']),
        ({"": "x"}, ['server "bank": env: "" is not a variable name']),
        ({"N": 1}, ['server "bank": env N: the value must be a string']),
        ({"N": ["x"]}, ['server "bank": env N: the value must be a string']),
        ("N=x", ["servers[0].env must be an object of variable name to value, or an array of NAME=value strings"]),
        ([1], ["servers[0].env must be an object of variable name to value, or an array of NAME=value strings"]),
    ],
)
def test_a_malformed_env_is_refused_naming_the_server_and_the_field(tmp_path: Path, env: Any, names: list[str]) -> None:
    message = refusal(configuration(tmp_path, stdio(env=env)))
    for name in names:
        assert name in message


def test_a_repeated_env_name_is_refused_as_every_repeated_key_is(tmp_path: Path) -> None:
    path = write(
        tmp_path / "proxy.json",
        json.dumps(MINIMAL).replace('"command": ["x"]', '"command": ["x"], "env": {"N": "1", "N": "2"}'),
    )
    assert '"env": {"N": "1", "N": "2"}' in path.read_text()
    with pytest.raises(ConfigError, match=r"repeated|duplicate"):
        load_config(path, environ={})


# ------------------------------------------------------------------------ ${env:NAME} read


def test_env_values_read_the_proxys_environment_whole_or_embedded(tmp_path: Path) -> None:
    server = stdio(
        env={"TOKEN": "${env:BANK_TOKEN}", "URL": "https://${env:HOST}:${env:PORT}/x", "LIT": "$${env:HOST} $5"},
        inherit_env=["LANG"],
    )
    loaded = load_config(
        configuration(tmp_path, server), environ={"BANK_TOKEN": SECRET, "HOST": "bank.example", "PORT": "8443"}
    )
    assert loaded.servers[0].env == (
        f"TOKEN={SECRET}",
        "URL=https://bank.example:8443/x",
        "LIT=${env:HOST} $5",  # $${ is a literal ${, a lone $ is itself
    )
    in_array = load_config(
        configuration(tmp_path, stdio(env=["TOKEN=${env:BANK_TOKEN}"])), environ={"BANK_TOKEN": "a=b"}
    )
    assert in_array.servers[0].env == ("TOKEN=a=b",)


def test_a_value_read_from_the_environment_is_not_read_again(tmp_path: Path) -> None:
    loaded = load_config(
        configuration(tmp_path, stdio(env={"A": "${env:OUTER}"})), environ={"OUTER": "${env:INNER}", "INNER": "no"}
    )
    assert loaded.servers[0].env == ("A=${env:INNER}",)


def test_a_header_reads_the_environment_so_the_token_need_not_sit_in_the_file(tmp_path: Path) -> None:
    server = {**HTTP, "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}", "X-Static": "plain"}}
    loaded = load_config(configuration(tmp_path, server), environ={"WEB_TOKEN": SECRET})
    assert loaded.servers[0].headers == {"Authorization": f"Bearer {SECRET}", "X-Static": "plain"}
    assert SECRET not in (tmp_path / "proxy.json").read_text()


def test_a_missing_variable_is_refused_naming_it_the_server_and_the_field(tmp_path: Path) -> None:
    message = refusal(configuration(tmp_path, stdio(env={"TOKEN": "${env:BANK_TOKEN}"})), {"OTHER": "x"})
    assert 'server "bank": env TOKEN: ${env:BANK_TOKEN}: BANK_TOKEN is not set in the proxy\'s environment' in message
    server = {**HTTP, "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}"}}
    message = refusal(configuration(tmp_path, server))
    assert 'server "web": headers: Authorization: ${env:WEB_TOKEN}: WEB_TOKEN is not set' in message
    message = refusal(configuration(tmp_path, stdio(env=["TOKEN=${env:ARRAY_TOKEN}"])))
    assert 'server "bank": env TOKEN: ${env:ARRAY_TOKEN}: ARRAY_TOKEN is not set' in message


@pytest.mark.parametrize(
    "value", ["${TOKEN}", "${env:}", "${env:1X}", "${input:token}", "Bearer ${env:TOKEN", "tail ${"]
)
def test_a_dollar_brace_that_is_not_a_reference_is_refused_without_quoting_the_value(
    tmp_path: Path, value: str
) -> None:
    for server, field in (
        (stdio(env={"TOKEN": value}), "env TOKEN"),
        ({**HTTP, "headers": {"X-Key": value}}, "headers: X-Key"),
    ):
        message = refusal(configuration(tmp_path, server), {"TOKEN": SECRET})
        assert f"{field}: a ${{ that is not ${{env:NAME}}" in message
        assert value not in message and SECRET not in message


def test_a_header_variable_holding_a_newline_is_refused_and_never_echoed(tmp_path: Path) -> None:
    server = {**HTTP, "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}"}}
    message = refusal(configuration(tmp_path, server), {"WEB_TOKEN": SECRET + "\r\nX-Evil: 1"})
    assert (
        'server "web": headers: the value of Authorization, as read from the environment, must be a one-line' in message
    )
    assert SECRET not in message and "Evil" not in message


@pytest.mark.parametrize(
    ("server", "field"),
    [
        (stdio(command=["x", "--token=${env:TOKEN}"]), "command[1]"),
        (stdio(command=["${env:PROGRAM}"]), "command[0]"),
        ({**HTTP, "endpoint": "http://${env:HOST}/mcp"}, "endpoint"),
    ],
)
def test_a_reference_in_command_or_endpoint_is_refused_naming_the_field(
    tmp_path: Path, server: dict[str, Any], field: str
) -> None:
    message = refusal(configuration(tmp_path, server), {"TOKEN": "x", "PROGRAM": "x", "HOST": "h"})
    assert f"{field}: ${{env:...}} is read only in env and headers values" in message


def test_the_policy_identity_does_not_depend_on_what_the_environment_holds(tmp_path: Path) -> None:
    path = configuration(tmp_path, stdio(env={"TOKEN": "${env:T}"}))
    one = load_config(path, environ={"T": "one"})
    other = load_config(path, environ={"T": "other"})
    assert one.servers[0].env != other.servers[0].env
    assert one.policy_id() == other.policy_id()
    literal = load_config(configuration(tmp_path, stdio()), environ={})
    assert literal.policy_id() == one.policy_id()


def test_the_reach_check_reads_the_command_not_the_env_values(tmp_path: Path) -> None:
    path = configuration(tmp_path, stdio(env={"DB": "${env:DB_PATH}"}))
    loaded = load_config(path, environ={"DB_PATH": str(tmp_path / "runs.db")})
    check_reach(loaded)  # an env value is the server's input, not its arguments: as before


def test_the_operators_commands_need_no_token_to_find_the_database(tmp_path: Path) -> None:
    path = configuration(tmp_path, {**HTTP, "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}"}})
    loaded = load_config(path, environ={}, expand_env=False)
    assert loaded.database == tmp_path / "runs.db"
    assert loaded.servers[0].headers == {"Authorization": "Bearer ${env:WEB_TOKEN}"}
    bad = configuration(tmp_path, {**HTTP, "headers": {"Authorization": "Bearer ${TOKEN}"}})
    with pytest.raises(ConfigError, match="is not"):  # still checked, only not read
        load_config(bad, environ={}, expand_env=False)


# ----------------------------------------------------------------------- max_message_bytes


def test_max_message_bytes_defaults_to_80_mib_and_reaches_every_server(tmp_path: Path) -> None:
    loaded = load_config(configuration(tmp_path), environ={})
    assert loaded.max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES == 80 * 1024 * 1024
    chosen = load_config(configuration(tmp_path, max_message_bytes=1048576), environ={})
    assert chosen.max_message_bytes == 1048576
    assert [s.max_message_bytes for s in chosen.servers] == [1048576]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("16MiB", "max_message_bytes must be a whole number of bytes"),
        (1.5, "max_message_bytes must be a whole number of bytes"),
        (True, "max_message_bytes must be a whole number of bytes"),
        (0, "max_message_bytes 0 is not between 65536 (64 KiB) and 1073741824 (1 GiB)"),
        (-1, "max_message_bytes -1 is not between"),
        (65535, "max_message_bytes 65535 is not between"),
        (1073741825, "max_message_bytes 1073741825 is not between"),
    ],
)
def test_a_max_message_bytes_that_is_not_a_sane_size_is_refused(tmp_path: Path, value: Any, message: str) -> None:
    assert message in refusal(configuration(tmp_path, max_message_bytes=value))


def test_the_bounds_of_max_message_bytes_are_accepted(tmp_path: Path) -> None:
    for value in (65536, 1073741824):
        assert load_config(configuration(tmp_path, max_message_bytes=value), environ={}).max_message_bytes == value
