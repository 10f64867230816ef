"""Shared test fixtures.

Every test can run against two targets, chosen by AGENTRT_PROXY_TARGET:

- `source` (the default): the package straight from this checkout;
- `pyz`: the single file `dist/agentrt-proxy.pyz` built by build_zipapp.py.

Black-box tests that run the program as a host would are marked `@pytest.mark.program`
and reach it only through `program_argv` / `program_env` / `run_program`, so the same
test checks both targets. scripts/test runs the whole suite against `source`, then the
`program` tests again against `pyz`.
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "program: runs the real program as a child process; also run against the built .pyz",
    )


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
