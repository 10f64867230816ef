"""Shared test fixtures.

Every test can run against two targets, chosen by AGENTRT_PROXY_TARGET:

- `source` (the default): the package straight from this checkout;
- `pyz`: the single file `dist/agentrt-proxy.pyz` built by build_zipapp.py.

Black-box tests that run the program as a host would are marked `@pytest.mark.program`
and reach it only through `program_argv` / `program_env` / `run_program`, so the same
test checks both targets. scripts/test runs the whole suite against `source`, then the
`program` tests again against `pyz`, less the modules in `SOURCE_ONLY` (marked `source_only`
here): what they drive runs the same modules in the same way from the zip as from the tree,
and a `pyz` test elsewhere already takes every path where the two can differ
(docs/building.md, "What runs where").
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# Fixtures shared by the in-process tests of a layer and the black-box tests of tests/program.
pytest_plugins = ["tests.operator_fixtures", "tests.recheck_fixtures"]
PYZ_PATH = REPO_ROOT / "dist" / "agentrt-proxy.pyz"
TARGETS = ("source", "pyz")


# Program tests that scripts/test runs against the source tree only, each with the reason the
# built file could not fail them differently. A zip differs from the tree in: how modules and the
# vendored jsonschema/anyio/idna are imported (zipimport, -I, no site-packages, bytecode), how the
# program names and re-runs itself (argv[0], the demo's children), and its start-up. Every
# subcommand's own start, schema validation, the serving path, HTTP upstreams and the build stay
# on both targets; a new program test runs on both unless it is listed here.
SOURCE_ONLY = {
    "tests/chaos/test_kills.py": "kills at random instants: the records' invariants, not the start-up",
    "tests/faults/test_database.py": "the store's faults: the same store code either way",
    "tests/faults/test_http_upstream.py": "the HTTP fault matrix: test_http_upstreams.py takes the HTTP path",
    "tests/faults/test_stdio_upstream.py": "the stdio fault matrix: test_serve_process.py takes the stdio path",
    "tests/program/test_big_files.py": "large results over a path test_serve_process.py takes",
    "tests/program/test_bounded_upstream.py": "the reader's bounds: the same reader either way",
    "tests/program/test_budget_attacks.py": "budget rules: pure logic behind the serving path",
    "tests/program/test_budget_processes.py": "budgets across processes: the store's logic",
    "tests/program/test_changed_tools.py": "re-listing and pinned specs: logic behind the serving path",
    "tests/program/test_conformance_server.py": "the npm conformance suite: wire behaviour, the same either way",
    "tests/program/test_console_browser.py": "the browser against pages test_console_http.py fetches from both",
    "tests/program/test_database_faults.py": "the database replaced while serving: the store's logic",
    "tests/program/test_forwarding.py": "sampling and elicitation relayed: wire logic",
    "tests/program/test_host_extremes.py": "the host reader's bounds: test_host_messages.py takes that path",
    "tests/program/test_lease_starvation.py": "the renewal thread: the same thread either way",
    "tests/program/test_node_peers.py": "Node peers: wire interoperability, the same either way",
    "tests/program/test_oauth_conformance.py": "the OAuth conformance scenarios: the same OAuth code either way",
    "tests/program/test_oauth_upstreams.py": "OAuth flows over the HTTP client test_http_upstreams.py takes",
    "tests/program/test_results_through_peers.py": "results compared with a direct connection: wire logic",
    "tests/program/test_servers_down.py": "supervision and restarts: logic behind the serving path",
    "tests/program/test_task_clients.py": "task clients: wire logic over the serving path",
    "tests/program/test_tasks.py": "tasks and their ticks: logic behind the serving path",
    "tests/program/test_tasks_across.py": "tasks across calls and hosts: logic behind the serving path",
    "tests/program/test_tasks_for_the_operator.py": "tasks in the operator's commands, which run on both elsewhere",
    "tests/program/test_untrusted_paths.py": "taint rules: pure logic behind the serving path",
    "tests/program/test_upstream_notes.py": "notifications relayed: wire logic",
    "tests/program/test_watch_screen.py": "watch in tmux: test_watch.py starts watch from both",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "program: runs the real program as a child process; also run against the built .pyz unless source_only",
    )
    config.addinivalue_line(
        "markers",
        "source_only: a program test scripts/test runs against the source tree only (conftest.SOURCE_ONLY)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [name for name in SOURCE_ONLY if not (REPO_ROOT / name).is_file()]
    if missing:
        raise pytest.UsageError(f"conftest.SOURCE_ONLY names files that do not exist: {missing}")
    for item in items:
        if item.path.relative_to(REPO_ROOT).as_posix() in SOURCE_ONLY:
            item.add_marker(pytest.mark.source_only)


def current_target() -> str:
    """The target named by AGENTRT_PROXY_TARGET (default `source`)."""
    target = os.environ.get("AGENTRT_PROXY_TARGET", "source")
    if target not in TARGETS:
        raise pytest.UsageError(f"AGENTRT_PROXY_TARGET must be one of {TARGETS}, not {target!r}")
    return target


def target_argv(target: str) -> list[str]:
    """The argv prefix that runs the CLI for `target`."""
    if target == "pyz":
        # -I: what an installed copy would see; the .pyz's bootstrap strips site-packages.
        return [sys.executable, "-I", str(PYZ_PATH)]
    return [sys.executable, "-m", "agentrt_proxy"]


def target_env(target: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child running `target`: the source tree first on PYTHONPATH."""
    env = dict(os.environ)
    if target == "source":
        inherited = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), inherited) if p)
    env.update(extra or {})
    return env


def checked_target() -> str:
    """The current target; fails the test if the .pyz is wanted but not built."""
    target = current_target()
    if target == "pyz" and not PYZ_PATH.is_file():
        pytest.fail(f"{PYZ_PATH} is missing: run `python3 build_zipapp.py` first", pytrace=False)
    return target


@pytest.fixture(scope="session")
def program_target() -> str:
    """`source` or `pyz`, as chosen by AGENTRT_PROXY_TARGET."""
    return checked_target()


@pytest.fixture(scope="session")
def program_argv(program_target: str) -> list[str]:
    """argv prefix that runs agentrt-proxy: append the subcommand and its arguments."""
    return target_argv(program_target)


@pytest.fixture(scope="session")
def program_env(program_target: str) -> dict[str, str]:
    """Environment to pass with `program_argv` (copy it before changing it)."""
    return target_env(program_target)


def run_program(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    **kwargs: object,
) -> subprocess.CompletedProcess[str]:
    """Run agentrt-proxy for the current target with `args`; capture text output.

    `env` adds to (it does not replace) the target's environment. Other keyword arguments
    go to subprocess.run (for example `input=` or `cwd=`). Never raises on a non-zero exit:
    tests assert on `returncode`.
    """
    target = checked_target()
    options: dict[str, object] = {"capture_output": True, "text": True, "stdin": subprocess.DEVNULL}
    if "input" in kwargs:
        del options["stdin"]
    options.update(kwargs)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*target_argv(target), *args],
        env=target_env(target, env),
        timeout=timeout,
        check=False,
        **options,
    )


@pytest.fixture
def anyio_backend() -> str:
    """The product runs on asyncio alone (docs/design.md), so its async tests do too."""
    return "asyncio"
