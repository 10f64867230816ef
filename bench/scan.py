"""The description scanner's figures: precision, recall and false-positive rate per rule and
overall on the evaluation corpus (tests/scan/corpus), and how long a scan of 100 tools takes.

    /work/main/.venv/bin/python bench/scan.py          (from the repository root)

Per rule: a true positive is a poisoned fixture that expects the rule and gets it, a false
negative one that expects it and does not, a false positive a benign fixture that gets it (at
any severity). Overall: a poisoned fixture is caught when it gets its expected verdict's
severity (hard, or soft for the soft-only fixtures); a benign one is a false positive when it
gets a hard finding (and, counted apart, any finding). The class corpus (issue 24) is then
judged per split (train: tuned on; heldout: written with it, not tuned on; blind: written after
the rules): recall per attack class, and hard false positives per kind of negative and per rule.
The timing scans 100 tools (the corpus's real and SDK-style definitions, repeated) in one
listing, best of 20 runs, the first scan in a fresh process (the patterns compiled) apart, and
100 of the class corpus's negatives, whose texts are longer.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrt_proxy.scan import RULES, Listing, scan, tool_definition  # noqa: E402
from tests.scan.corpus_eval import ClassFixture, class_fixtures, findings_of, fixtures, verdict  # noqa: E402


def _ratio(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:6.1%}" if denominator else "     -"


def per_rule() -> None:
    cases = fixtures()
    benign = [c for c in cases if not c.poisoned]
    poisoned = [c for c in cases if c.poisoned]
    found = {c.id: findings_of(c) for c in cases}
    print(f"corpus: {len(benign)} benign, {len(poisoned)} poisoned definitions\n")
    print(f"{'rule':<24} {'tp':>4} {'fn':>4} {'fp':>4} {'precision':>10} {'recall':>8} {'fp rate':>8}")
    for rule in RULES:
        tp = sum(1 for c in poisoned if rule in c.rules and any(f.rule == rule for f in found[c.id]))
        fn = sum(1 for c in poisoned if rule in c.rules and not any(f.rule == rule for f in found[c.id]))
        fp = sum(1 for c in benign if any(f.rule == rule for f in found[c.id]))
        print(
            f"{rule:<24} {tp:>4} {fn:>4} {fp:>4} {_ratio(tp, tp + fp):>10} {_ratio(tp, tp + fn):>8} {_ratio(fp, len(benign)):>8}"
        )
    caught = sum(1 for c in poisoned if verdict(found[c.id]) == c.verdict or (c.verdict == "soft" and found[c.id]))
    hard_fp = sum(1 for c in benign if verdict(found[c.id]) == "hard")
    any_fp = sum(1 for c in benign if found[c.id])
    hard_expected = [c for c in poisoned if c.verdict == "hard"]
    hard_caught = sum(1 for c in hard_expected if verdict(found[c.id]) == "hard")
    print()
    print(f"overall: recall {_ratio(caught, len(poisoned)).strip()} ({caught}/{len(poisoned)}), "
          f"hard recall {_ratio(hard_caught, len(hard_expected)).strip()} ({hard_caught}/{len(hard_expected)}), "
          f"precision {_ratio(caught, caught + hard_fp).strip()}, "
          f"false-positive rate {_ratio(hard_fp, len(benign)).strip()} hard, {_ratio(any_fp, len(benign)).strip()} any finding")  # fmt: skip


def _grouped(cases: list[ClassFixture]) -> dict[str, list[ClassFixture]]:
    by_class: dict[str, list[ClassFixture]] = {}
    for c in cases:
        by_class.setdefault(c.cls, []).append(c)
    return by_class


def per_class() -> None:
    """Issue 24's class corpus, train and held-out apart: recall per attack class, and false
    positives (hard findings) per rule and per kind of negative."""
    cases = class_fixtures()
    found = {c.id: c.findings() for c in cases}
    for split in ("train", "heldout", "blind", "blind2", "blind3"):
        mine = [c for c in cases if c.split == split]
        attacks = [c for c in mine if c.poisoned]
        negatives = [c for c in mine if not c.poisoned]
        print(f"\nclass corpus, {split}: {len(attacks)} attacks, {len(negatives)} negatives")
        print(f"  {'attack class':<16} {'caught':>8} {'recall':>8}")
        for cls, group in _grouped(attacks).items():
            caught = sum(1 for c in group if c.caught(found[c.id]))
            print(f"  {cls:<16} {caught:>4}/{len(group):<3} {_ratio(caught, len(group)):>8}")
        hard_classes = [c for c in attacks if not c.soft_class]
        caught_hard = sum(1 for c in hard_classes if c.caught(found[c.id]))
        print(
            f"  {'hard classes':<16} {caught_hard:>4}/{len(hard_classes):<3} {_ratio(caught_hard, len(hard_classes)):>8}"
        )
        print(f"  {'negative kind':<16} {'hard fp':>8} {'any':>6}")
        for kind, group in _grouped(negatives).items():
            hard = sum(1 for c in group if c.caught(found[c.id]))
            anything = sum(1 for c in group if found[c.id])
            print(f"  {kind:<16} {hard:>4}/{len(group):<3} {anything:>6}")
        rules = sorted({f.rule for c in negatives for f in found[c.id]})
        shown = ", ".join(
            f"{rule} {sum(1 for c in negatives if any(f.rule == rule and f.hard for f in found[c.id]))}"
            f"/{sum(1 for c in negatives if any(f.rule == rule for f in found[c.id]))}"
            for rule in rules
        )
        print(f"  false positives per rule (hard/any): {shown or 'none'}")


def timing() -> None:
    benign = [c for c in fixtures() if not c.poisoned]
    definitions = [d for c in benign for listing in c.listings for d in listing.definitions]
    hundred = Listing("bench", tuple((definitions * (100 // len(definitions) + 1))[:100]))
    runs, cpu = [], []
    for _ in range(20):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = scan([hundred])
        runs.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert result.tools_scanned == 100
    negatives = [c.listing.definitions[0] for c in class_fixtures() if not c.poisoned]
    long_hundred = Listing("bench", tuple((negatives * 2)[:100]))
    long_runs = []
    for _ in range(20):
        start = time.perf_counter()
        scan([long_hundred])
        long_runs.append(time.perf_counter() - start)
    first = subprocess.run(
        [sys.executable, "-c", (
            "import sys, time; sys.path.insert(0, %r); t = time.perf_counter(); "
            "from agentrt_proxy.scan import scan, Listing, tool_definition; "
            "tools = tuple(tool_definition({'name': f't{i}', 'description': 'Read the complete contents of a file.'}) for i in range(100)); "
            "scan([Listing('s', tools)]); print(f'{(time.perf_counter() - t) * 1000:.1f}')"
        ) % str(ROOT)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    print(f"\nscan of 100 tools: best {min(runs) * 1000:.1f} ms, median {statistics.median(runs) * 1000:.1f} ms "
          f"(20 runs), best CPU time {min(cpu) * 1000:.1f} ms (the wall time counts other processes on a "
          f"loaded machine); first scan in a fresh process, import and pattern compilation included: "
          f"{first.stdout.strip()} ms")  # fmt: skip
    print(f"scan of 100 of the class corpus's negatives (longer texts): best {min(long_runs) * 1000:.1f} ms, "
          f"median {statistics.median(long_runs) * 1000:.1f} ms (20 runs)")  # fmt: skip
    worst = 0.0
    for unit in ("x.", "a-", "a@", "`a", "http://", "a tool ", "when ", "'a ", "call a_b ", "User: x\n", '{"_a": '):
        text = unit * (40_000 // len(unit))
        start = time.process_time()
        scan([Listing("bench", (tool_definition({"name": "t", "description": text}),))])
        worst = max(worst, time.process_time() - start)
    print(f"one 40 kB description built to make patterns backtrack: at most {worst * 1000:.0f} ms of CPU time")


if __name__ == "__main__":
    per_rule()
    per_class()
    timing()
