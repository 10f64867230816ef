"""The configuration file, its file checks, the reach check and PolicyID (proxy-and-mcp-module §2.1, §2.2).

Original tests covered: every TestConfig_* of proxy-and-mcp-module §5.2 and
TestConfig_PolicyIDCoversWhatThePolicyDecidesFrom (proxy-and-mcp-module §5.5 item 2).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy import canonical
from agentrt_proxy.canonical.durations import HOUR, MINUTE, SECOND
from agentrt_proxy.config import DEFAULT_POLICY, ConfigError, check_database_file, check_reach, load_config, read_owned

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")

MINIMAL: dict[str, Any] = {
    "database": "runs.db",
    "session": "s",
    "servers": [
        {
            "name": "bank",
            "command": ["x"],
            "manifest": "m.json",
            "rules": {"pay": {"side_effect": "remote_mutation"}},
        }
    ],
}


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def minimal(**changes: Any) -> dict[str, Any]:
    value = copy.deepcopy(MINIMAL)
    value.update(changes)
    return value


def with_server(**changes: Any) -> dict[str, Any]:
    value = copy.deepcopy(MINIMAL)
    value["servers"][0].update(changes)
    return value


def with_rule(**changes: Any) -> dict[str, Any]:
    value = copy.deepcopy(MINIMAL)
    value["servers"][0]["rules"]["pay"].update(changes)
    return value


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return tmp_path / "proxy.json"


def load_text(path: Path, text: str):
    write(path, text)
    return load_config(path)


def refused(path: Path, text: str) -> str:
    write(path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert str(path) in message, message  # every refusal names the file
    assert "Traceback" not in message
    return message


# ------------------------------------------------------------------ TestConfig_RefusesUnknownFields


def test_the_minimal_configuration_loads(config_path: Path) -> None:
    # TestConfig_RefusesUnknownFields: minimal parses
    config = load_text(config_path, compact(MINIMAL))
    assert config.session == "s"
    assert [s.name for s in config.servers] == ["bank"]
    assert config.servers[0].rules["pay"].side_effect == "remote_mutation"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (compact(minimal(hold_for="1s")), ['unknown field "hold_for"']),
        (compact(with_server(manifets="m.json")), ['unknown field "manifets"', "servers[0]"]),
        (compact(with_rule(denny=["x"])), ['unknown field "denny"', "pay"]),
        (compact(MINIMAL) + "{}", ["trailing data after the configuration"]),
        (compact(MINIMAL) + " x", ["trailing data after the configuration"]),
        (compact(minimal(policy={"remote_mutation": "maybe"})), ["policy: remote_mutation: outcome \"maybe\""]),
        (compact(minimal(policy={"destructive": "abort"})), ["policy: destructive: outcome \"abort\""]),
        (compact(minimal(hold=15)), ["hold", 'a duration is a string such as "15s"']),
        (compact(with_rule(outcome="ask")), ['server "bank": tool "pay": outcome "ask" is not allow']),
    ],
)
def test_unknown_fields_and_values_are_refused_naming_file_and_field(
    config_path: Path, text: str, names: list[str]
) -> None:
    # TestConfig_RefusesUnknownFields
    message = refused(config_path, text)
    for name in names:
        assert name in message


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({k: v for k, v in MINIMAL.items() if k != "database"}, "database is required"),
        (minimal(database=""), "database is required"),
        (minimal(servers=[]), "at least one server is required"),
        ({k: v for k, v in MINIMAL.items() if k != "servers"}, "at least one server is required"),
        (minimal(policy={"reading": "allow"}), 'policy: unknown side effect "reading"'),
        (
            minimal(policy={"read_only": "ask"}),
            'policy: read_only: outcome "ask" is not allow, require_approval, or deny',
        ),
        (minimal(max_pending=-1), "max_pending must not be negative"),
        (minimal(lease_ttl="1s"), "lease_ttl 1s is shorter than 3s"),
        (minimal(status_tool="a b"), 'status_tool "a b" does not match ^[a-zA-Z0-9_-]{1,64}$'),
        (with_server(name=""), "servers[0]: name is required"),
        (minimal(servers=[MINIMAL["servers"][0]] * 2), 'servers[1]: the name "bank" is used twice'),
        (with_server(endpoint="http://localhost:1/mcp"), 'server "bank": exactly one of command or endpoint'),
        (
            {**MINIMAL, "servers": [{"name": "bank", "manifest": "m.json"}]},
            'server "bank": exactly one of command or endpoint is required',
        ),
        (with_server(manifest=""), 'server "bank": manifest is required'),
        (with_rule(timeout="5"), 'server "bank": tool "pay": timeout: time: missing unit in duration "5"'),
        (minimal(hold="-1s"), 'hold: duration "-1s" is negative'),
        (minimal(repeat_window=600), "repeat_window: a duration is a string"),
    ],
)
def test_validation_messages_name_the_file_and_the_field(config_path: Path, config: dict, message: str) -> None:
    # proxy-and-mcp-module §2.1.3
    assert message in refused(config_path, compact(config))


def test_validation_runs_in_the_originals_order(config_path: Path) -> None:
    # proxy-and-mcp-module §2.1.3: database, session, servers, policy, max_pending, lease_ttl, status_tool, servers[i]
    everything_wrong = {
        "session": "a b",
        "servers": [{"name": "", "command": ["x"], "manifest": "m.json"}],
        "policy": {"nope": "allow"},
        "max_pending": -1,
        "lease_ttl": "1s",
        "status_tool": "a b",
    }
    expected = [
        "database is required",
        "session",
        "policy: unknown side effect",
        "max_pending must not be negative",
        "lease_ttl 1s is shorter than 3s",
        "status_tool",
        "servers[0]: name is required",
    ]
    fixes = [
        ("database", "runs.db"),
        ("session", "s"),
        ("policy", {}),
        ("max_pending", 0),
        ("lease_ttl", "3s"),
        ("status_tool", "gate_status"),
    ]
    for index, wanted in enumerate(expected):
        assert wanted in refused(config_path, compact(everything_wrong))
        if index < len(fixes):
            everything_wrong[fixes[index][0]] = fixes[index][1]


def test_rules_are_checked_in_tool_name_order(config_path: Path) -> None:
    config = with_server(rules={"zeta": {"outcome": "nope"}, "alpha": {"timeout": "5"}})
    assert 'tool "alpha"' in refused(config_path, compact(config))


# ------------------------------------------------------------ TestConfig_RefusesAnUnsafeSessionName


@pytest.mark.parametrize("session", ["", "a b", "../x", "a.b", "x;rm", "é", "a" * 65, "a/b", "a\nb"])
def test_an_unsafe_session_name_is_refused(config_path: Path, session: str) -> None:
    # TestConfig_RefusesAnUnsafeSessionName
    message = refused(config_path, compact(minimal(session=session)))
    assert "session" in message
    assert "must be 1 to 64 letters, digits, '_' or '-'" in message


@pytest.mark.parametrize(
    ("session", "quoted"),
    [("a b", '"a b"'), ("a\nb\x1b[2J", '"a\\nb\\x1b[2J"'), ("\u202eevil", '"\\u202eevil"'), ('q"\\', '"q\\"\\\\"')],
)
def test_a_refused_value_is_quoted_as_go_quotes_it(config_path: Path, session: str, quoted: str) -> None:
    # The original's %q: a control or bidi character in a refused value reaches no terminal raw.
    message = refused(config_path, compact(minimal(session=session)))
    assert f"session {quoted} must be" in message


@pytest.mark.parametrize("session", ["a", "a" * 64, "Laptop_2-x", "0"])
def test_a_safe_session_name_is_accepted(config_path: Path, session: str) -> None:
    assert load_text(config_path, compact(minimal(session=session))).session == session


# ------------------------------------------------------------------- TestConfig_DefaultsAndRelativePaths


def test_defaults_and_relative_paths(config_path: Path) -> None:
    # TestConfig_DefaultsAndRelativePaths
    config = load_text(config_path, compact(MINIMAL))
    directory = config_path.parent
    assert config.path == config_path
    assert config.database == directory / "runs.db"
    assert config.database.is_absolute()
    assert config.servers[0].manifest == directory / "m.json"
    assert config.servers[0].manifest.is_absolute()
    assert config.hold == 15 * SECOND
    assert config.repeat_window == 10 * MINUTE
    assert config.max_pending == 5
    assert config.approval_ttl == 24 * HOUR
    assert config.grant_ttl == 24 * HOUR
    assert config.status_tool == "gate_status"
    assert config.lease_ttl == 30 * SECOND
    assert config.policy == {
        "read_only": "allow",
        "local_mutation": "allow",
        "remote_mutation": "require_approval",
        "destructive": "deny",
    }
    assert config.servers[0].connect_timeout == 30 * SECOND


def test_relative_paths_are_taken_against_the_files_directory_not_the_working_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config_path = write(tmp_path / "etc" / "proxy.json", compact(with_server(manifest="sub/m.json")))
    config = load_config(os.path.relpath(config_path))
    assert config.path == config_path
    assert config.database == tmp_path / "etc" / "runs.db"
    assert config.servers[0].manifest == tmp_path / "etc" / "sub" / "m.json"
    assert config.servers[0].command == ("x",)  # command arguments are not resolved


def test_absolute_paths_stay_and_zero_values_mean_what_the_spec_says(config_path: Path, tmp_path: Path) -> None:
    db = tmp_path / "abs" / "runs.db"
    config = load_text(
        config_path,
        compact(minimal(database=str(db), hold="0s", repeat_window="0s", max_pending=0, approval_ttl="0s")),
    )
    assert config.database == db
    assert config.hold == 0
    assert config.repeat_window == 0
    assert config.max_pending == 5  # 0 means the default
    assert config.approval_ttl == 0


def test_a_class_left_out_of_the_policy_keeps_its_default(config_path: Path) -> None:
    config = load_text(config_path, compact(minimal(policy={"local_mutation": "require_approval"})))
    assert config.policy == {**DEFAULT_POLICY, "local_mutation": "require_approval"}


# ------------------------------------------------------------------- TestConfig_RefusesFilesOthersCanWrite


@posix_only
def test_a_configuration_others_can_write_is_refused_naming_its_path(config_path: Path) -> None:
    # TestConfig_RefusesFilesOthersCanWrite: config 0666
    write(config_path, compact(MINIMAL), 0o666)
    with pytest.raises(ConfigError) as caught:
        load_config(config_path)
    message = str(caught.value)
    assert message.startswith("config: ")
    assert str(config_path) in message
    assert "-rw-rw-rw-" in message


@posix_only
@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_group_or_world_write_alone_is_enough_to_refuse(config_path: Path, mode: int) -> None:
    write(config_path, compact(MINIMAL), mode)
    with pytest.raises(ConfigError, match="group or others"):
        load_config(config_path)


@posix_only
def test_a_manifest_others_can_write_is_refused_naming_it(tmp_path: Path) -> None:
    # TestConfig_RefusesFilesOthersCanWrite: manifest 0664 (read through read_owned)
    manifest = write(tmp_path / "bank.manifest.json", '{"server":"bank"}', 0o664)
    with pytest.raises(ConfigError) as caught:
        read_owned(manifest)
    assert str(manifest) in str(caught.value)
    assert "manifest" in str(caught.value)
    os.chmod(manifest, 0o644)
    assert read_owned(manifest) == b'{"server":"bank"}'


@posix_only
def test_a_database_others_can_write_is_refused_naming_the_database(tmp_path: Path) -> None:
    # TestConfig_RefusesFilesOthersCanWrite: database 0646
    db = write(tmp_path / "runs.db", "", 0o646)
    with pytest.raises(ConfigError) as caught:
        check_database_file(db)
    assert str(caught.value).startswith("database: ")
    assert str(db) in str(caught.value)
    os.chmod(db, 0o600)
    check_database_file(db)


def test_a_database_that_does_not_exist_yet_is_fine(tmp_path: Path) -> None:
    check_database_file(tmp_path / "new.db")


def test_a_database_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^database: .* is not a regular file$"):
        check_database_file(tmp_path)


def test_a_missing_configuration_is_refused_naming_it(config_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_path)
    assert str(caught.value).startswith("config: ")
    assert str(config_path) in str(caught.value)


def test_a_configuration_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a regular file"):
        load_config(tmp_path)


@posix_only
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to give a file away")
def test_a_configuration_another_user_owns_is_refused(config_path: Path) -> None:
    write(config_path, compact(MINIMAL), 0o644)
    os.chown(config_path, 65534, 65534)
    with pytest.raises(ConfigError, match="owned by uid 65534"):
        load_config(config_path)


# ------------------------------------------------------------------ TestConfig_RefusesWhatCouldReadTwoWays


def test_a_repeated_key_at_the_top_level_is_refused(config_path: Path) -> None:
    # TestConfig_RefusesWhatCouldReadTwoWays
    text = '{"session":"s","session":"t",' + compact(minimal())[1:].replace('"session":"s",', "")
    assert 'not usable JSON: duplicate key "session"' in refused(config_path, text)


def test_a_repeated_key_in_a_rule_is_refused(config_path: Path) -> None:
    # TestConfig_RefusesWhatCouldReadTwoWays
    text = compact(MINIMAL).replace(
        '"side_effect":"remote_mutation"', '"side_effect":"remote_mutation","side_effect":"read_only"'
    )
    assert 'not usable JSON: duplicate key "side_effect"' in refused(config_path, text)


def test_lease_ttl_below_three_seconds_is_refused_and_three_accepted(config_path: Path) -> None:
    # TestConfig_RefusesWhatCouldReadTwoWays
    assert "lease_ttl 1s is shorter than 3s" in refused(config_path, compact(minimal(lease_ttl="1s")))
    assert load_text(config_path, compact(minimal(lease_ttl="3s"))).lease_ttl == 3 * SECOND


def test_a_number_past_its_bound_is_refused(config_path: Path) -> None:
    # TestConfig_RefusesWhatCouldReadTwoWays: max_pending 1e-10000000
    text = compact(MINIMAL)[:-1] + ',"max_pending":1e-10000000}'
    message = refused(config_path, text)
    assert "not usable JSON: number 1e-10000000 has an exponent beyond ±10000" in message


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"session":"\xff"}', "not valid UTF-8"),
        (b'{"session":"\\ud800"}', "unpaired surrogate \\ud800"),
        (b'{"a":' * 257 + b"1" + b"}" * 257, "nested deeper than 256 levels"),
    ],
)
def test_anything_the_json_boundary_refuses_is_refused(config_path: Path, raw: bytes, reason: str) -> None:
    config_path.write_bytes(raw)
    os.chmod(config_path, 0o600)
    with pytest.raises(ConfigError) as caught:
        load_config(config_path)
    assert str(caught.value) == f"config {config_path}: not usable JSON: {reason}"


def test_a_manifest_with_a_repeated_key_reads_as_a_duplicate(tmp_path: Path) -> None:
    # TestConfig_RefusesWhatCouldReadTwoWays: manifest with a duplicated "server" key
    manifest = write(tmp_path / "m.json", '{"server":"bank","server":"evil","tools":[]}')
    with pytest.raises(canonical.JSONBoundaryError, match='duplicate key "server"'):
        canonical.parse_strict(read_owned(manifest))


def test_a_database_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    # TestConfig_RefusesWhatCouldReadTwoWays: database symlink
    real = write(tmp_path / "real.db", "")
    link = tmp_path / "runs.db"
    link.symlink_to(real)
    with pytest.raises(ConfigError) as caught:
        check_database_file(link)
    assert str(caught.value) == f"database: {link} is a symbolic link; name the database file itself"
    dangling = tmp_path / "dangling.db"
    dangling.symlink_to(tmp_path / "nowhere.db")
    with pytest.raises(ConfigError, match="symbolic link"):
        check_database_file(dangling)


# -------------------------------------------------------------------------------- the reach check


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME is a temp dir holding ~/proxy (config, manifest; database maybe) and ~/sandbox."""
    home = tmp_path / "home"
    (home / "proxy").mkdir(parents=True)
    (home / "sandbox").mkdir()
    (home / "other").mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    write(home / "proxy" / "m.json", "{}")
    return home


def reach(home: Path, argument: str, *, database_exists: bool = True, **server: Any) -> str | None:
    """Load a config whose one server takes `argument`; the reach check's refusal or None."""
    if database_exists:
        write(home / "proxy" / "runs.db", "")
    config = with_server(command=["prog", argument], **server)
    config_path = write(home / "proxy" / "proxy.json", compact(config))
    loaded = load_config(config_path)
    try:
        check_reach(loaded)
    except ConfigError as err:
        return str(err)
    return None


def _refused_spellings(home: Path) -> list[str]:
    proxy = home / "proxy"
    link = home / "link-to-proxy"
    if not link.exists():
        link.symlink_to(proxy)
    return [
        str(proxy),
        f"{proxy}/",
        str(link),
        f"{link}/",
        f"--root={proxy}",
        str(home),
        str(proxy / "runs.db"),
        str(proxy / "m.json"),
        str(proxy / "proxy.json"),
        str(proxy / "sub" / ".." / "runs.db"),
        "/",
        "~",
        "~/",
        "~/proxy",
        "~/proxy/runs.db",
        f"-r{proxy}",
        f"--root:{proxy}",
        f"file://{proxy}",
        f"file://{proxy}/",
        f"FILE://{proxy}",
        f"--root=file://{proxy}",
        f"-rfile://{proxy}",
        "file:///",
        os.path.relpath(proxy),  # relative to the proxy's working directory
    ]


ACCEPTED = [
    "--flag",
    "not-a-path",
    "-v",
    "-p8080",
    "--port=8080",
    "http://localhost:8080/x",
    "a:b",
    "--",
    "-",
    "~nobody",
    "~/sandbox",
    "~/sandbox/deeper",
]


def test_every_spelling_that_reaches_the_proxys_files_is_refused(home: Path) -> None:
    # TestConfig_RefusesAServerThatReachesTheProxysFiles + TestConfig_ReachCheckReadsCommonSpellings
    for argument in _refused_spellings(home):
        message = reach(home, argument)
        assert message is not None, f"{argument!r} was accepted"
        assert f"its argument {json.dumps(argument)} reaches " in message
        assert 'server "bank"' in message
        assert "skip_path_check" in message
        assert "which the proxy's policy and approvals depend on" in message


@pytest.mark.parametrize("argument", ACCEPTED)
def test_spellings_that_do_not_reach_the_proxys_files_are_accepted(home: Path, argument: str) -> None:
    # TestConfig_ReachCheckReadsCommonSpellings: accepted
    assert reach(home, argument) is None


def test_a_sibling_directory_elsewhere_is_accepted(home: Path) -> None:
    # TestConfig_RefusesAServerThatReachesTheProxysFiles: a sibling dir with --flag not-a-path opens
    sandbox = home / "sandbox"
    for argument in (str(sandbox), f"-r{sandbox}", f"--root={sandbox}", f"file://{sandbox}", str(home / "other")):
        assert reach(home, argument) is None, argument
    config = with_server(command=["prog", str(sandbox), "--flag", "not-a-path"])
    check_reach(load_config(write(home / "proxy" / "proxy.json", compact(config))))


def test_skip_path_check_accepts_any_argument(home: Path) -> None:
    # TestConfig_RefusesAServerThatReachesTheProxysFiles: skip_path_check opens
    for argument in ("/", str(home / "proxy"), "~"):
        assert reach(home, argument, skip_path_check=True) is None


def test_the_program_itself_and_endpoint_servers_are_not_checked(home: Path) -> None:
    config = with_server(command=[str(home / "proxy" / "proxy.json")])
    check_reach(load_config(write(home / "proxy" / "proxy.json", compact(config))))
    config = copy.deepcopy(MINIMAL)
    del config["servers"][0]["command"]
    config["servers"][0]["endpoint"] = "http://localhost:1/mcp"
    check_reach(load_config(write(home / "proxy" / "proxy.json", compact(config))))


def test_a_database_not_created_yet_is_protected_by_its_path(home: Path) -> None:
    # proxy-and-mcp-module §2.1.5: a protected file that does not exist yet is remembered by its resolved path
    database = home / "proxy" / "runs.db"
    assert not database.exists()
    message = reach(home, str(database), database_exists=False)
    assert message is not None and f"reaches {database}" in message
    link = home / "link-to-proxy"
    link.symlink_to(home / "proxy")
    assert reach(home, str(link / "runs.db"), database_exists=False) is not None
    assert reach(home, f"--db={database}", database_exists=False) is not None
    assert reach(home, str(home / "proxy" / "other.db"), database_exists=False) is None


def test_a_protected_file_named_through_a_symlinked_directory_is_refused(home: Path, tmp_path: Path) -> None:
    # the symlink-resolved chain: the config lives in a directory reached through a link
    real = tmp_path / "real-proxy"
    (home / "proxy").rename(real)
    (home / "proxy").symlink_to(real)
    assert reach(home, str(real)) is not None
    assert reach(home, str(tmp_path)) is not None


def test_an_upper_cased_path_is_refused_on_a_case_insensitive_file_system(home: Path) -> None:
    upper = Path(str(home / "proxy").upper())
    if not upper.exists() or upper.stat().st_ino != (home / "proxy").stat().st_ino:
        pytest.skip("this file system is case-sensitive")
    assert reach(home, str(upper)) is not None


# ------------------------------------------------------------------------------------- PolicyID

FS_EXAMPLE: dict[str, Any] = {
    "database": "proxy.db",
    "session": "laptop",
    "policy": {"local_mutation": "require_approval"},
    "servers": [
        {
            "name": "fs",
            "command": ["node", "/path/to/index.js", "/home/me/sandbox"],
            "connect_timeout": "30s",
            "default_timeout": "5s",
            "manifest": "fs.manifest.json",
            "rules": {
                "read_text_file": {"side_effect": "read_only", "timeout": "5s"},
                "list_directory": {"side_effect": "read_only", "timeout": "5s"},
                "write_file": {"side_effect": "local_mutation", "timeout": "10s", "allow_hint_mismatch": True},
            },
        }
    ],
}
FS_CANONICAL = (
    b'{"policy":{"destructive":"deny","local_mutation":"require_approval","read_only":"allow",'
    b'"remote_mutation":"require_approval"},"servers":[{"name":"fs","rules":{"list_directory":'
    b'{"side_effect":"read_only"},"read_text_file":{"side_effect":"read_only"},"write_file":'
    b'{"side_effect":"local_mutation"}}}]}'
)
FS_ID = "agentrt-proxy/sha256:0e827fab2e3d8397ae02532a5d7d4279cd89187db86f5dc1d60c84f6293f3eb8"


def policy_id(path: Path, config: dict[str, Any] | str) -> str:
    return load_text(path, config if isinstance(config, str) else compact(config)).policy_id()


def test_worked_policy_id_example(config_path: Path) -> None:
    # proxy-and-mcp-module §2.2 worked example
    config = load_text(config_path, compact(FS_EXAMPLE))
    assert canonical.canonical_bytes(config.policy_identity()) == FS_CANONICAL
    assert config.policy_id() == FS_ID


def _fs(change) -> dict[str, Any]:
    config = copy.deepcopy(FS_EXAMPLE)
    change(config)
    return config


def _rule(config: dict[str, Any], tool: str = "write_file") -> dict[str, Any]:
    return config["servers"][0]["rules"][tool]


KEEPS_THE_ID = {
    "description": lambda c: _rule(c).update(description="Writes a file, carefully."),
    "timeout": lambda c: _rule(c).update(timeout="1m"),
    "hold": lambda c: c.update(hold="0s"),
    "session": lambda c: c.update(session="desktop"),
    "explicit default": lambda c: c["policy"].update(read_only="allow", destructive="deny"),
    "database": lambda c: c.update(database="other.db"),
    "command": lambda c: c["servers"][0].update(command=["other"]),
    "deny list": lambda c: _rule(c).update(deny=["path"]),
    "repeat_window": lambda c: c.update(repeat_window="1m"),
    "rule repeat_window": lambda c: _rule(c).update(repeat_window="1m"),
    "max_pending": lambda c: c.update(max_pending=2),
    "ttls": lambda c: c.update(approval_ttl="1h", grant_ttl="1h"),
    "lease_ttl": lambda c: c.update(lease_ttl="10s"),
    "status_tool": lambda c: c.update(status_tool="status"),
    "connect_timeout": lambda c: c["servers"][0].update(connect_timeout="5s", default_timeout="1s"),
    "env": lambda c: c["servers"][0].update(env=["A=b"], inherit_env=["PATH"]),
    "allow_hint_mismatch": lambda c: _rule(c).update(allow_hint_mismatch=False),
    "manifest": lambda c: c["servers"][0].update(manifest="other.json"),
}

CHANGES_THE_ID = {
    "policy": lambda c: c["policy"].update(local_mutation="deny"),
    "policy of another class": lambda c: c["policy"].update(read_only="require_approval"),
    "class": lambda c: _rule(c).update(side_effect="remote_mutation"),
    "outcome": lambda c: _rule(c).update(outcome="allow"),
    "rename": lambda c: _rule(c).update(rename="write"),
    "fixed": lambda c: _rule(c).update(fixed={"n": 10}),
    "server name": lambda c: c["servers"][0].update(name="files"),
    "removed rule": lambda c: c["servers"][0]["rules"].pop("list_directory"),
    "added rule": lambda c: c["servers"][0]["rules"].update(move_file={"side_effect": "local_mutation"}),
}


@pytest.mark.parametrize("change", KEEPS_THE_ID.values(), ids=KEEPS_THE_ID.keys())
def test_what_the_policy_does_not_decide_from_keeps_the_id(config_path: Path, change) -> None:
    # TestConfig_PolicyIDCoversWhatThePolicyDecidesFrom
    assert policy_id(config_path, _fs(change)) == FS_ID


@pytest.mark.parametrize("change", CHANGES_THE_ID.values(), ids=CHANGES_THE_ID.keys())
def test_what_the_policy_decides_from_changes_the_id(config_path: Path, change) -> None:
    # TestConfig_PolicyIDCoversWhatThePolicyDecidesFrom
    changed = policy_id(config_path, _fs(change))
    assert changed != FS_ID
    assert changed.startswith("agentrt-proxy/sha256:")


def test_a_fixed_value_keeps_its_literal_in_the_id(config_path: Path) -> None:
    # TestConfig_PolicyIDCoversWhatThePolicyDecidesFrom: fixed 10 vs 10.0
    text = compact(_fs(lambda c: _rule(c).update(fixed={"n": 10})))
    ten = policy_id(config_path, text)
    ten_point_zero = policy_id(config_path, text.replace('"n":10', '"n":10.0'))
    assert ten != ten_point_zero
    assert b'"fixed":{"n":10.0}' in canonical.canonical_bytes(load_config(config_path).policy_identity())


def test_servers_enter_the_id_sorted_by_name(config_path: Path) -> None:
    second = copy.deepcopy(FS_EXAMPLE["servers"][0])
    second.update(name="alpha", manifest="alpha.json", rules={})
    one_order = _fs(lambda c: c["servers"].append(second))
    other_order = _fs(lambda c: c["servers"].insert(0, second))
    assert policy_id(config_path, one_order) == policy_id(config_path, other_order)
    identity = load_config(config_path).policy_identity()
    assert [s["name"] for s in identity["servers"]] == ["alpha", "fs"]
    assert identity["servers"][0]["rules"] == {}

