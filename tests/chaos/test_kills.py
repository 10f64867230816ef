"""SIGKILL at random instants: no payment twice, none unapproved, every unknown outcome asked about.

The harness is tests/chaos/chaos.py; bench/chaos.py runs it longer and prints the figures.
CI runs at least 100 kills against the source tree (not again against the .pyz: tests/conftest.py SOURCE_ONLY).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.chaos import chaos
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.program, pytest.mark.timeout(600)]

KILLS = int(os.environ.get("AGENTRT_CHAOS_KILLS", "100"))
BURST = int(os.environ.get("AGENTRT_CHAOS_BURST", "3"))  # calls sent at once: their writes share COMMITs


def test_a_hundred_kills_of_two_proxies_leave_no_double_and_no_unapproved_payment(
    tmp_path: Path, program_argv: list[str], program_env: dict[str, str]
) -> None:
    seed = int.from_bytes(os.urandom(4), "big")  # printed: bench/chaos.py -seed replays a failure
    figures = chaos.run(tmp_path, program_argv, program_env, REPO_ROOT, kills=KILLS, seed=seed, burst=BURST)
    print(f"seed {seed}, burst {BURST}: {figures.line()}")
    assert figures.kills >= KILLS
    assert figures.paid > 0 and figures.approvals > 0  # the run did something worth checking
    assert figures.violations == [], (seed, figures.violations[:10])
