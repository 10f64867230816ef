"""The crash harness, long: two proxies, random SIGKILLs, restarts, an operator; prints the figures.

    python3 bench/chaos.py [-kills N] [-seed S] [-burst B] [-pyz dist/agentrt-proxy.pyz]

Runs tests/chaos/chaos.py (the harness CI runs with 100 kills) until N kills happened
(default 1000), then settles and prints one line of figures: rounds, calls, kills,
approvals, rejections, paid answers, executions cut off inside the upstream call, invariant
checks, violations, seconds. Exit status 1 if any invariant was violated (each is printed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.chaos import chaos  # noqa: E402
from tests.conftest import target_env  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-kills", type=int, default=1000)
    parser.add_argument("-seed", type=int, default=1)
    parser.add_argument("-burst", type=int, default=1,
                        help="send up to this many calls at once in a round (their writes share COMMITs)")
    parser.add_argument("-pyz", type=Path, default=None, help="run the built file instead of the source tree")
    options = parser.parse_args()
    if options.pyz is not None:
        argv, env = [sys.executable, "-I", str(options.pyz)], target_env("pyz")
    else:
        argv, env = [sys.executable, "-m", "agentrt_proxy"], target_env("source")
    with tempfile.TemporaryDirectory(prefix="agentrt-chaos-") as directory:
        figures = chaos.run(Path(directory), argv, env, REPO, kills=options.kills, seed=options.seed,
                             burst=options.burst)
    print(figures.line())
    for violation in figures.violations:
        print("violation:", violation)
    return 1 if figures.violations else 0


if __name__ == "__main__":
    sys.exit(main())
