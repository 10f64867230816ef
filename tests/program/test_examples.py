"""Every file under examples/ is loaded by the real code, so the examples cannot rot.

Proxy configurations go through ``config.load_config`` (copied into a temporary home with
the placeholder ``/home/me`` replaced, mode 0600), the rules file through
``config.read_rules``, and every host configuration must start the single file with
``python3 <...>.pyz serve -config <...>/proxy.json``. The filesystem example is also run as
the README tells a newcomer to (pin, check, a host lists and calls the tools) when the
stock filesystem server can be started with npx.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agentrt_proxy import config
from tests.conftest import REPO_ROOT, checked_target, run_program, target_argv, target_env

EXAMPLES = REPO_ROOT / "examples"
PLACEHOLDER_HOME = "/home/me"
PROXY_CONFIGS = sorted(EXAMPLES.rglob("proxy.json"))
HOST_JSON = sorted((EXAMPLES / "hosts").glob("*.json"))
FS_PACKAGE = "@modelcontextprotocol/server-filesystem@2026.8.31"
# What the examples read from the proxy's environment (${env:NAME}), as a shell would hold it.
EXAMPLE_ENV = {"TRACKER_TOKEN": "example-token-0123", "BILLING_CLIENT_SECRET": "example-secret-0123"}


def install_example(example: Path, home: Path) -> Path:
    """Copy ``example`` into ``home/proxy`` with ``/home/me`` replaced by ``home``; mode 0600."""
    text = example.read_text(encoding="utf-8").replace(PLACEHOLDER_HOME, str(home))
    directory = home / "proxy"
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / example.name
    target.write_text(text, encoding="utf-8")
    target.chmod(0o600)
    return target


def test_there_are_examples() -> None:
    names = {p.relative_to(EXAMPLES).as_posix() for p in PROXY_CONFIGS}
    expected = {"filesystem/proxy.json", "http/proxy.json", "tokens/proxy.json", "media/proxy.json", "oauth/proxy.json"}
    assert expected <= names
    assert (EXAMPLES / "rules.json").is_file()
    hosts = {p.name for p in HOST_JSON}
    assert {"claude_desktop_config.json", "claude-code.mcp.json", "vscode.mcp.json", "cursor.mcp.json"} <= hosts


@pytest.mark.parametrize("example", PROXY_CONFIGS, ids=lambda p: p.parent.name)
def test_example_configuration_loads(example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in EXAMPLE_ENV.items():
        monkeypatch.setenv(name, value)
    loaded = config.load_config(install_example(example, tmp_path))
    assert loaded.database == tmp_path / "proxy" / "proxy.db"
    assert loaded.servers, example
    for server in loaded.servers:
        assert server.manifest.parent == tmp_path / "proxy"
        assert server.rules, f"{example}: server {server.name} classifies nothing"
        assert all(rule.side_effect in config.SIDE_EFFECTS for rule in server.rules.values())
    # The reach check passes: no server's arguments name the proxy's own files.
    config.check_reach(loaded)


def test_filesystem_example_says_what_the_readme_says(tmp_path: Path) -> None:
    loaded = config.load_config(install_example(EXAMPLES / "filesystem" / "proxy.json", tmp_path))
    assert loaded.policy["local_mutation"] == "require_approval"
    assert loaded.policy["read_only"] == "allow"
    (fs,) = loaded.servers
    assert fs.command is not None and fs.command[-1] == str(tmp_path / "sandbox")
    assert fs.rules["write_file"].side_effect == "local_mutation"
    assert fs.rules["read_text_file"].side_effect == "read_only"
    assert "read_media_file" not in fs.rules  # left unclassified on purpose


def test_media_example_caps_results_at_four_mebibytes_and_reads_images(tmp_path: Path) -> None:
    loaded = config.load_config(install_example(EXAMPLES / "media" / "proxy.json", tmp_path))
    assert loaded.max_result_bytes == 4 * 1024 * 1024  # the README's worked example: an image through the proxy
    (fs,) = loaded.servers
    assert fs.command is not None and fs.command[-1] == str(tmp_path / "pictures")
    assert fs.rules["read_media_file"].side_effect == "read_only"
    assert {rule.side_effect for rule in fs.rules.values()} == {"read_only"}


def test_http_example_is_a_streamable_http_server(tmp_path: Path) -> None:
    loaded = config.load_config(install_example(EXAMPLES / "http" / "proxy.json", tmp_path))
    (server,) = loaded.servers
    assert server.endpoint is not None and server.endpoint.startswith("http://127.0.0.1:")
    assert server.command is None


def test_tokens_example_reads_its_secrets_from_the_environment(tmp_path: Path) -> None:
    example = install_example(EXAMPLES / "tokens" / "proxy.json", tmp_path)
    environ = {"HOME": str(tmp_path), **EXAMPLE_ENV}
    loaded = config.load_config(example, environ=environ)
    memory, tracker = loaded.servers
    assert memory.env == (f"MEMORY_FILE_PATH={tmp_path}/.agentrt/memory.jsonl", "NPM_CONFIG_UPDATE_NOTIFIER=false")
    assert tracker.headers == {"Authorization": "Bearer example-token-0123"}
    assert "example-token-0123" not in example.read_text()
    assert loaded.max_message_bytes == 8 * 1024 * 1024
    with pytest.raises(config.ConfigError, match=r'server "tracker": headers: Authorization: \$\{env:TRACKER_TOKEN\}'):
        config.load_config(example, environ={"HOME": str(tmp_path)})


def test_oauth_example_names_a_browser_login_and_a_machine_client(tmp_path: Path) -> None:
    example = install_example(EXAMPLES / "oauth" / "proxy.json", tmp_path)
    notes, billing = config.load_config(example, environ=EXAMPLE_ENV).servers
    assert notes.auth is not None and notes.auth.grant == "authorization_code" and notes.auth.client_id is None
    assert billing.auth is not None and billing.auth.grant == "client_credentials"
    assert billing.auth.client_secret == "example-secret-0123" and billing.auth.scopes == ("invoices:read",)
    assert notes.auth.token_file == tmp_path / "proxy" / "proxy.db.oauth-tokens.json" == billing.auth.token_file


def test_rules_file_reads(tmp_path: Path) -> None:
    rules = config.read_rules(install_example(EXAMPLES / "rules.json", tmp_path))
    assert rules["write_file"].side_effect == "local_mutation"
    assert rules["write_file"].allow_hint_mismatch


def _launch(entry: dict[str, Any]) -> list[str]:
    assert isinstance(entry.get("command"), str) and isinstance(entry.get("args"), list), entry
    return [entry["command"], *entry["args"]]


def _host_launches() -> list[tuple[str, list[str]]]:
    launches: list[tuple[str, list[str]]] = []
    for path in HOST_JSON:
        tree = json.loads(path.read_text(encoding="utf-8"))
        servers = tree.get("mcpServers") or tree.get("servers")
        assert isinstance(servers, dict) and servers, f"{path.name}: no mcpServers or servers object"
        for name, entry in servers.items():
            if "type" in entry:
                assert entry["type"] == "stdio", f"{path.name}: {name}"
            launches.append((f"{path.name}:{name}", _launch(entry)))
    for line in (EXAMPLES / "hosts" / "claude-code.sh").read_text(encoding="utf-8").splitlines():
        if line.startswith("claude mcp add"):
            words = shlex.split(line)
            launches.append(("claude-code.sh", words[words.index("--") + 1 :]))
    return launches


def test_every_host_configuration_launches_the_single_file() -> None:
    launches = _host_launches()
    assert {label.split(":")[0] for label, _ in launches} == {p.name for p in HOST_JSON} | {"claude-code.sh"}
    for label, argv in launches:
        assert argv[0] == "python3", label
        assert argv[1].endswith("/agentrt-proxy.pyz"), label
        assert argv[2:4] == ["serve", "-config"], label
        assert argv[4].endswith("/proxy.json") and len(argv) == 5, label
        assert os.path.isabs(argv[1]) and os.path.isabs(argv[4]), f"{label}: a host needs absolute paths"


# --------------------------------------------------------------------------- the filesystem example, live


def _npx_can_start_the_filesystem_server(sandbox: Path) -> str | None:
    """None when npx starts the pinned server without the network; else why the test skips."""
    npx = shutil.which("npx")
    if npx is None or shutil.which("node") is None:
        return "node and npx are not installed"
    try:
        done = subprocess.run(
            [npx, "--offline", "-y", FS_PACKAGE, str(sandbox)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
        )
    except subprocess.TimeoutExpired:
        return "npx did not start the filesystem server within 60 s"
    if "running on stdio" not in done.stderr:
        return f"{FS_PACKAGE} is not in the npm cache (run the README's example once with the network)"
    return None


@pytest.mark.program
def test_filesystem_example_word_by_word(tmp_path: Path) -> None:
    """README: copy the example, pin, check; then a host lists the tools, reads, and writes once
    an operator approves within the hold."""
    import anyio

    from agentrt_proxy.mcp.client import open_connection
    from agentrt_proxy.mcp.outcomes import Result
    from agentrt_proxy.mcp.spec import ServerSpec

    home = tmp_path
    sandbox = home / "sandbox"
    sandbox.mkdir()
    (sandbox / "note.txt").write_text("hello from the sandbox\n")
    reason = _npx_can_start_the_filesystem_server(sandbox)
    if reason is not None:
        pytest.skip(reason)
    proxy_json = install_example(EXAMPLES / "filesystem" / "proxy.json", home)

    pinned = run_program(["pin", "-config", str(proxy_json)], timeout=120)
    assert pinned.returncode == 0, pinned.stderr
    assert "server fs: 14 tools pinned in" in pinned.stdout
    checked = run_program(["check", "-config", str(proxy_json)], timeout=120)
    assert checked.returncode == 0, checked.stderr
    assert "registered write_file as fs_write_file (local_mutation)" in checked.stdout
    assert "unclassified read_media_file" in checked.stdout
    # The rules file's shape, in place of the example's rules, loads against the same server.
    with_rules = json.loads(proxy_json.read_text())
    with_rules["servers"][0]["rules"] = json.loads((EXAMPLES / "rules.json").read_text())
    rules_json = proxy_json.with_name("proxy-rules.json")
    rules_json.write_text(json.dumps(with_rules))
    rules_json.chmod(0o600)
    checked_rules = run_program(["check", "-config", str(rules_json)], timeout=120)
    assert checked_rules.returncode == 0, checked_rules.stderr
    assert "registered move_file as fs_rename_file (destructive)" in checked_rules.stdout

    target = checked_target()
    entries = [f"PYTHONPATH={REPO_ROOT}"] if target == "source" else []
    spec = ServerSpec(
        name="gated",
        command=[*target_argv(target), "serve", "-config", str(proxy_json)],
        env=entries,
        connect_timeout_ns=120 * 10**9,
    )
    second = 10**9

    def approve_the_waiting_write() -> subprocess.CompletedProcess[str]:
        db = str(home / "proxy" / "proxy.db")
        env = target_env(target)
        for _ in range(200):
            runs = subprocess.run([*target_argv(target), "runs", "-db", db, "-json"], env=env,
                                  capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
            waiting = [r for r in json.loads(runs.stdout or '{"runs": []}')["runs"]
                       if r.get("pending_approval_id")]
            if waiting:
                run = waiting[0]
                return subprocess.run(
                    [*target_argv(target), "approve", "-db", db, run["id"], "-approval",
                     run["pending_approval_id"], "-by", "test", "-yes"],
                    env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
            time.sleep(0.05)
        raise AssertionError("no run waited for an approval")

    async def host() -> None:
        async with open_connection(spec) as conn:
            names = {t.name for t in conn.tools}
            assert {"fs_list_directory", "fs_read_text_file", "fs_write_file", "gate_status"} <= names
            assert "fs_read_media_file" not in names
            listed = await conn.call_tool("fs_list_directory", json.dumps({"path": str(sandbox)}), 30 * second)
            assert isinstance(listed, Result) and not listed.is_error and "note.txt" in listed.text, listed
            read = await conn.call_tool("fs_read_text_file", json.dumps({"path": str(sandbox / "note.txt")}),
                                        30 * second)
            assert isinstance(read, Result) and "hello from the sandbox" in read.text, read
            write_args = json.dumps({"path": str(sandbox / "out.txt"), "content": "approved\n"})
            async with anyio.create_task_group() as tg:
                decided: list[subprocess.CompletedProcess[str]] = []

                async def operator() -> None:
                    decided.append(await anyio.to_thread.run_sync(approve_the_waiting_write))

                tg.start_soon(operator)
                wrote = await conn.call_tool("fs_write_file", write_args, 60 * second)
            assert decided and decided[0].returncode == 0, decided
            assert isinstance(wrote, Result) and not wrote.is_error, wrote
            assert (sandbox / "out.txt").read_text() == "approved\n"

    anyio.run(host)


def test_resources_example_opts_in_to_resources_and_prompts(tmp_path: Path) -> None:
    loaded = config.load_config(install_example(EXAMPLES / "resources" / "proxy.json", tmp_path))
    (docs,) = loaded.servers
    assert docs.resources and docs.prompts
    assert docs.prompt_names == {"simple-prompt": "hello"}


def test_budgets_example_caps_payments_and_keeps_them_from_following_a_web_page(tmp_path: Path) -> None:
    from decimal import Decimal

    loaded = config.load_config(install_example(EXAMPLES / "budgets" / "proxy.json", tmp_path))
    daily, monthly = loaded.budgets
    assert (daily.name, daily.tools, daily.limit) == ("daily", ("bank_pay",), Decimal("100.00"))
    assert daily.window == 24 * 3600 * 10**9
    assert daily.currency is None and daily.over_budget == "deny"
    assert (monthly.currency, monthly.over_budget) == ("EUR", "require_approval")
    bank, web = loaded.servers
    assert (bank.trust, web.trust) == ("trusted", "untrusted")
    pay = bank.rules["pay"]
    assert (pay.amount_field, pay.currency_field, pay.requires_clean_context) == ("amount", "/currency", True)
    assert "budgets" in loaded.policy_identity()


def test_tasks_example_keeps_a_task_a_day_past_its_approval_window(tmp_path: Path) -> None:
    example = install_example(EXAMPLES / "tasks" / "proxy.json", tmp_path)
    loaded = config.load_config(example)
    hour = 3600 * 10**9
    assert (loaded.hold, loaded.approval_ttl, loaded.task_ttl) == (10 * 10**9, 8 * hour, 32 * hour)
    assert loaded.policy["remote_mutation"] == "require_approval"  # a payment waits for an operator: a task
    (bank,) = loaded.servers
    assert bank.rules["pay"].side_effect == "remote_mutation"
    # Left out, task_ttl is the approval's window plus a day: the same 32h here.
    document = json.loads(example.read_text())
    del document["task_ttl"]
    example.write_text(json.dumps(document))
    assert config.load_config(example).task_ttl == 32 * hour


def test_forward_example_relays_the_servers_sampling_and_elicitation_to_the_host(tmp_path: Path) -> None:
    loaded = config.load_config(install_example(EXAMPLES / "forward" / "proxy.json", tmp_path))
    (every,) = loaded.servers
    assert every.forward == ("sampling", "elicitation")
    assert set(every.rules) == {"trigger-sampling-request", "trigger-elicitation-request"}
