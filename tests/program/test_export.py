"""``export`` of the demo's database and ``verify -file`` of the export, offline."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_program

pytestmark = [pytest.mark.program, pytest.mark.usefixtures("program_target"), pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def demo_db() -> Iterator[str]:
    done = run_program(["demo", "-keep"], timeout=240)
    kept = re.search(r"^kept (\S+); read it with:$", done.stdout, re.MULTILINE)
    assert done.returncode == 0 and kept is not None, done.stdout[-2000:]
    directory = kept.group(1).rstrip(";")
    yield str(Path(directory) / "runs.db")
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_export_of_the_demo_verifies_offline_and_one_changed_byte_fails_naming_its_seq(
    demo_db: str, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / f"events.{fmt}"
    done = run_program(["export", "-db", demo_db, "-format", fmt, "-o", str(out)])
    assert done.returncode == 0, done.stderr
    head = re.search(r"head (\d+):([0-9a-f]{64})", done.stderr)
    assert head is not None, done.stderr
    assert (out.stat().st_mode & 0o777) == 0o600
    moved = tmp_path / "elsewhere" / out.name  # no database beside it
    moved.parent.mkdir()
    out.rename(moved)
    ok = run_program(["verify", "-file", str(moved), "-head", f"{head[1]}:{head[2]}"])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"seq 1..{head[1]}" in ok.stdout and f"kept head: seq {head[1]} matches" in ok.stdout

    text = moved.read_text()
    lines = text.splitlines(keepends=True)
    index = 11 if fmt == "csv" else 10  # the csv has its header first: seq 11 either way
    target = lines[index]
    assert target.startswith("11,") or target.startswith('{"seq":11,')
    changed = target.replace("run", "rum", 1) if "run" in target else target.replace("a", "b", 1)
    assert len(changed) == len(target) and changed != target
    lines[index] = changed
    moved.write_text("".join(lines))
    bad = run_program(["verify", "-file", str(moved)])
    assert bad.returncode == 1
    assert "BROKEN at seq 11" in bad.stdout, bad.stdout


def test_an_export_since_a_time_checks_on_its_own_and_against_a_kept_head(demo_db: str, tmp_path: Path) -> None:
    everything = run_program(["export", "-db", demo_db])
    assert everything.returncode == 0
    rows = everything.stdout.splitlines()
    at = re.search(r'"at":"([^"]+)"', rows[-1])
    assert at is not None
    part = tmp_path / "part.jsonl"
    assert run_program(["export", "-db", demo_db, "-since", at[1], "-o", str(part)]).returncode == 0
    kept = re.search(r'"seq":(\d+).*"hash":"([0-9a-f]+)"', rows[-1])
    assert kept is not None
    ok = run_program(["verify", "-file", str(part), "-head", f"{kept[1]}:{kept[2]}"])
    assert ok.returncode == 0, ok.stdout
    assert "taken as written" in ok.stdout
    wrong = run_program(["verify", "-file", str(part), "-head", f"{kept[1]}:{'0' * 64}"])
    assert wrong.returncode == 1 and "the trail was rewritten" in wrong.stdout
