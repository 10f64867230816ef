"""An HTTP upstream behind OAuth, through the real program (issue 26).

The authorization server and the MCP server it protects are the test world of
``tests/fixtures/oauth_world.py`` (one stdlib HTTP server in a thread): it records every
authorization and token request and every tool call it ran, and those records are what the
tests count. ``login`` runs as an operator runs it, with ``-no-browser``; the test follows the
URL it prints as a browser would. The host is the SDK's client over ``serve``'s pipes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import anyio
import pytest

from agentrt_proxy.store import COMPLETED, Store
from tests.conftest import checked_target, run_program, target_env
from tests.fixtures.oauth_world import CLIENT_SECRET, World
from tests.harness import is_error, text_of
from tests.program.oauth_flow import host, login, write_config

pytestmark = [pytest.mark.program, pytest.mark.anyio, pytest.mark.timeout(180)]

OAUTH = {"type": "oauth"}
TOKENS = "proxy.db.oauth-tokens.json"


def runs_of(db: Path) -> tuple[list[str], int]:
    """Every run's status, and how many approvals were asked for."""
    store = Store.open_readonly(str(db))
    try:
        runs = [summary.run.status for summary in store.list_runs(1000)]
        with store.read() as conn:
            approvals = conn.execute("SELECT count(*) FROM approvals").fetchone()[0]
    finally:
        store.close()
    return runs, int(approvals)


def logged_in(tmp_path: Path, world: World, auth: dict[str, object] | None = None) -> Path:
    config = write_config(tmp_path, world, auth or OAUTH)
    done = login(config)
    assert done.returncode == 0, done.stderr
    pinned = run_program(["pin", "-config", str(config)], timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    return config


def tokens_held(tmp_path: Path) -> list[dict[str, object]]:
    return list(json.loads((tmp_path / TOKENS).read_text())["tokens"])


# ---------------------------------------------------------------------------- login


def test_login_registers_a_client_and_fetches_a_token_with_pkce_and_the_resource_on_both_requests(
    tmp_path: Path,
) -> None:
    with World() as world:
        config = write_config(tmp_path, world, OAUTH)
        done = login(config)
        assert done.returncode == 0, done.stderr
        authorize = [e for e in world.log if e["path"] == "/authorize"]
        token = [e for e in world.log if e["path"] == "/token"]
        registered = [e for e in world.log if e["path"] == "/register"]
    assert len(registered) == 1 and len(authorize) == 1 and len(token) == 1
    assert authorize[0]["code_challenge_method"] == "S256"
    assert authorize[0]["resource"] == token[0]["resource"] == world.endpoint
    assert authorize[0]["scope"] == "read offline_access"  # the challenge's scope, and offline_access offered
    assert token[0]["redirect_uri"] == authorize[0]["redirect_uri"]
    assert token[0]["redirect_uri"].startswith("http://127.0.0.1:") and token[0]["redirect_uri"].endswith("/callback")
    assert os.stat(tmp_path / TOKENS).st_mode & 0o777 == 0o600
    assert [t["server"] for t in tokens_held(tmp_path)] == ["notes"]


def test_a_callback_with_another_state_is_refused_and_the_login_still_takes_its_own(tmp_path: Path) -> None:
    seen: list[int] = []

    def forge(url: str) -> None:
        redirect = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["redirect_uri"][0]
        try:
            urllib.request.urlopen(redirect + "?code=forged&state=not-the-one", timeout=10)
        except urllib.error.HTTPError as err:
            seen.append(err.code)

    with World() as world:
        done = login(write_config(tmp_path, world, OAUTH), before=forge)
        codes = [e["code"] for e in world.log if e["path"] == "/token"]
    assert seen == [400]
    assert done.returncode == 0, done.stderr
    assert len(codes) == 1 and codes[0] != "forged"  # the forged code never reached the token endpoint


def test_a_callback_whose_iss_is_not_the_issuer_fails_the_login_and_keeps_no_token(tmp_path: Path) -> None:
    with World(wrong_iss=True) as world:
        done = login(write_config(tmp_path, world, OAUTH))
        exchanged = [e for e in world.log if e["path"] == "/token"]
    assert done.returncode == 1 and "iss" in done.stderr and "RFC 9207" in done.stderr
    assert exchanged == [] and not (tmp_path / TOKENS).exists()


def test_an_authorization_server_that_lists_no_s256_is_refused_before_anything_is_authorized(tmp_path: Path) -> None:
    with World(s256=False) as world:
        done = login(write_config(tmp_path, world, OAUTH))
        asked = [e["path"] for e in world.log]
    assert done.returncode == 1 and "S256" in done.stderr
    assert done.url is None and "/authorize" not in asked and "/register" not in asked
    assert not (tmp_path / TOKENS).exists()


def test_login_to_a_server_that_asks_for_no_authorization_says_it_needs_none(tmp_path: Path) -> None:
    with World(protected=False) as world:
        done = login(write_config(tmp_path, world, OAUTH))
        asked = [e["path"] for e in world.log]
    assert done.returncode == 1 and "it needs no login" in done.stderr
    assert asked == [] and not (tmp_path / TOKENS).exists()


def test_the_client_credentials_grant_logs_in_without_a_browser_and_serves(tmp_path: Path) -> None:
    auth = {"type": "oauth", "grant": "client_credentials", "client_id": "machine", "client_secret": "${env:SECRET}"}
    with World(lifetime=1) as world:
        config = write_config(tmp_path, world, auth)
        done = login(config, env={"SECRET": CLIENT_SECRET})
        assert done.returncode == 0 and done.url is None, done.stderr
        time.sleep(1.5)  # the token has expired: pin fetches a new one itself
        pinned = run_program(["pin", "-config", str(config)], env={"SECRET": CLIENT_SECRET}, timeout=60)
        grants = world.grant_types()
    assert pinned.returncode == 0, pinned.stderr
    assert grants == ["client_credentials", "client_credentials"]
    assert tokens_held(tmp_path)[0]["client_secret"] is None  # a configured secret is never stored


def test_a_server_answering_401_without_auth_configured_fails_pin_naming_login_and_the_auth_field(
    tmp_path: Path,
) -> None:
    with World() as world:
        pinned = run_program(["pin", "-config", str(write_config(tmp_path, world, None))], timeout=60)
    assert pinned.returncode == 1
    assert "HTTP 401" in pinned.stderr and '"auth"' in pinned.stderr and "login" in pinned.stderr


def test_check_says_a_token_is_missing_then_which_scopes_it_holds_and_logout_deletes_it(tmp_path: Path) -> None:
    with World() as world:
        config = write_config(tmp_path, world, OAUTH)
        before = run_program(["check", "-config", str(config)], timeout=60)
        assert login(config).returncode == 0
        assert run_program(["pin", "-config", str(config)], timeout=60).returncode == 0
        after = run_program(["check", "-config", str(config)], timeout=60)
        out = run_program(["logout", "-config", str(config), "notes"], timeout=60)
    assert before.returncode == 1 and 'server "notes": no OAuth token: run agentrt-proxy login' in before.stdout
    assert after.returncode == 0, after.stderr
    assert (
        'server "notes": OAuth token held, expiring in' in after.stdout
        and "scopes: read offline_access" in after.stdout
    )
    assert out.returncode == 0 and tokens_held(tmp_path) == []


def test_a_token_file_that_others_may_read_is_refused(tmp_path: Path) -> None:
    with World() as world:
        config = logged_in(tmp_path, world)
        (tmp_path / TOKENS).chmod(0o644)
        checked = run_program(["check", "-config", str(config)], timeout=60)
    assert checked.returncode == 1 and "chmod 600" in checked.stderr


# ---------------------------------------------------------------------------- serving


async def test_a_token_that_expires_mid_session_is_refreshed_and_the_rotated_refresh_token_is_kept(
    tmp_path: Path,
) -> None:
    with World(lifetime=2, rotate=True) as world:
        config = logged_in(tmp_path, world)
        async with host(config) as session:
            first = await session.call_tool("notes_read_note", {})
            await anyio.sleep(2.5)  # the access token has expired
            second = await session.call_tool("notes_read_note", {})
            await anyio.sleep(2.5)
            third = await session.call_tool("notes_read_note", {})
        grants = world.grant_types()
        live = world.live_refresh_tokens()
        calls = [name for name, _ in world.calls]
    assert [text_of(r) for r in (first, second, third)] == ["read_note done"] * 3
    assert calls == ["read_note"] * 3
    assert grants.count("refresh_token") >= 2  # refreshed at least once per expiry (pin's among them)
    assert [t["refresh_token"] for t in tokens_held(tmp_path)] == live  # the live one, rotated each time


async def test_a_revoked_token_answers_the_call_as_not_sent_naming_login_and_nothing_runs(tmp_path: Path) -> None:
    with World() as world:
        config = logged_in(tmp_path, world)
        async with host(config) as session:
            ok = await session.call_tool("notes_read_note", {})
            world.revoke_all()  # the access and refresh tokens are gone
            refused = await session.call_tool("notes_read_note", {})
        calls = [name for name, _ in world.calls]
    assert text_of(ok) == "read_note done"
    assert is_error(refused) and "login" in text_of(refused) and '"notes"' in text_of(refused)
    assert "nothing was sent" in text_of(refused)
    assert calls == ["read_note"]  # the refused call did not run
    runs, approvals = runs_of(tmp_path / "proxy.db")
    assert sorted(runs) == sorted([COMPLETED, "FAILED"]) and approvals == 0  # failed, not unknown, nobody asked
    stderr = (tmp_path / "serve.stderr").read_text()
    assert stderr.count("refused its OAuth token") == 1 and "agentrt-proxy login -config" in stderr


async def test_a_403_insufficient_scope_is_not_sent_and_login_then_asks_for_that_scope(tmp_path: Path) -> None:
    with World() as world:
        config = logged_in(tmp_path, world)
        async with host(config) as session:
            refused = await session.call_tool("notes_send", {"to": "ann"})
        assert world.calls == []
        assert is_error(refused) and "write" in text_of(refused) and "login" in text_of(refused)
        again = login(config)
        assert again.returncode == 0, again.stderr
        scopes = [e.get("scope", "") for e in world.log if e["path"] == "/authorize"]
        async with host(config) as session:
            sent = await session.call_tool("notes_send", {"to": "ann"})
        calls = list(world.calls)
    assert scopes[0] == "read offline_access" and set(scopes[1].split()) == {"read", "write", "offline_access"}
    assert text_of(sent) == "send done" and calls == [("send", {"to": "ann"})]
    runs, approvals = runs_of(tmp_path / "proxy.db")
    assert sorted(runs) == sorted([COMPLETED, "FAILED"]) and approvals == 0


REFRESHER = """
import json, sys
from agentrt_proxy.config import load_config
from agentrt_proxy.oauth.serving import OAuthAuthorizer
server = load_config(sys.argv[1]).servers[0]
print(json.dumps(OAuthAuthorizer(server).headers()))
"""


def test_two_proxies_refreshing_the_same_token_at_once_both_end_with_a_live_token(tmp_path: Path) -> None:
    with World(rotate=True) as world:
        config = logged_in(tmp_path, world)
        world.expire_all()
        world.refresh_delay = 3.0  # the first refresh is still in flight when the second proxy wants one
        held = tokens_held(tmp_path)[0]
        (tmp_path / TOKENS).write_text(json.dumps({"version": 1, "tokens": [{**held, "expires_at": 0}]}))
        env = target_env(checked_target())
        procs = [
            subprocess.Popen([sys.executable, "-c", REFRESHER, str(config)], stdout=subprocess.PIPE, text=True, env=env)
            for _ in range(2)
        ]
        headers = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
        live = [world.live(h["Authorization"][7:]) is not None for h in headers]
        refreshes = world.grant_types().count("refresh_token")
        stored = tokens_held(tmp_path)[0]
        still = world.live_refresh_tokens()
    assert live == [True, True]
    assert refreshes == 1  # the second found the first's fresh token under the lock
    assert headers[0] == headers[1] and still == [stored["refresh_token"]]


async def test_a_mutation_whose_token_the_server_expired_early_is_refreshed_sent_again_and_runs_once(
    tmp_path: Path,
) -> None:
    with World() as world:
        config = logged_in(tmp_path, world, {"type": "oauth", "scopes": ["read", "write"]})
        async with host(config) as session:
            world.expire_all()  # the proxy still holds it as valid for an hour: the server says 401
            sent = await session.call_tool("notes_send", {"to": "bo"})
        calls = list(world.calls)
        grants = world.grant_types()
    assert (text_of(sent), is_error(sent)) == ("send done", False)
    assert calls == [("send", {"to": "bo"})]  # refused once unprocessed, then run exactly once
    assert grants.count("refresh_token") == 1
    runs, approvals = runs_of(tmp_path / "proxy.db")
    assert runs == [COMPLETED] and approvals == 0


async def test_no_token_or_code_appears_anywhere_but_the_token_file(tmp_path: Path) -> None:
    with World(lifetime=2) as world:
        config = logged_in(tmp_path, world, {"type": "oauth", "scopes": ["read", "write"]})
        answers = []
        async with host(config) as session:
            answers.append(await session.call_tool("notes_send", {"to": "cy"}))
            await anyio.sleep(2.5)  # expired: refreshed mid-session
            answers.append(await session.call_tool("notes_read_note", {}))
            world.revoke_all()
            answers.append(await session.call_tool("notes_read_note", {}))
            answers.append(await session.call_tool("gate_status", {}))
        secrets = list(world.issued)
    assert len(secrets) >= 5  # codes, access and refresh tokens
    runs = run_program(["runs", "-config", str(config), "-json"], timeout=60)
    shown = [
        run_program(["show", "-config", str(config), run["id"], "-json"], timeout=60).stdout
        for run in json.loads(runs.stdout)["runs"]
    ]
    exported = run_program(["export", "-config", str(config), "-o", str(tmp_path / "audit.jsonl")], timeout=60)
    assert runs.returncode == 0 and exported.returncode == 0 and len(shown) == 3
    texts = {
        "serve stderr": (tmp_path / "serve.stderr").read_text(),
        "runs -json": runs.stdout + runs.stderr,
        "show": "".join(shown),
        "answers to the host": json.dumps([a.model_dump() for a in answers]),
    }
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.name != TOKENS:
            texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    leaks = [(where, secret) for where, text in texts.items() for secret in secrets if secret in text]
    assert leaks == []
    held = (tmp_path / TOKENS).read_text()
    assert any(secret in held for secret in secrets)  # the walk would have found them


async def test_a_server_without_a_token_at_start_answers_naming_login_and_serves_once_logged_in(
    tmp_path: Path,
) -> None:
    with World() as world:
        config = logged_in(tmp_path, world)
        assert run_program(["logout", "-config", str(config), "notes"], timeout=60).returncode == 0
        async with host(config) as session:
            refused = await session.call_tool("notes_read_note", {})
            assert world.calls == []
            assert login(config).returncode == 0  # while serving: the supervisor's next start reads it
            for _ in range(120):  # its backoff: 1 s, 2 s, 4 s ... between starts
                answer = await session.call_tool("notes_read_note", {})
                if not is_error(answer):
                    break
                await anyio.sleep(0.5)
        calls = [name for name, _ in world.calls]
    assert is_error(refused) and "has not logged in" in text_of(refused) and "login" in text_of(refused)
    assert (text_of(answer), is_error(answer)) == ("read_note done", False)
    assert calls == ["read_note"]
    stderr = (tmp_path / "serve.stderr").read_text()
    assert stderr.count("holds no token yet") == 1 and "agentrt-proxy login -config" in stderr  # once, not per try
