"""The operator's read queries (store/reads.py): what the commands that print are given.

Databases are made by the gate (a run it paused on an approval), never by writing rows by hand.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from agentrt_proxy.store import Store, approval_reason, event_payloads, run_event_pages, runs_window
from tests.operator_fixtures import pause_run


@pytest.fixture
def three_waiting(tmp_path: Path) -> tuple[Path, list[str]]:
    db = tmp_path / "proxy.db"
    return db, [pause_run(db, goal=f"goal {n}")[0] for n in range(3)]


@pytest.mark.parametrize(
    ("limit", "offset", "page_size", "want"),
    [
        (0, 0, 1, [2, 1, 0]),  # 0 = every run, read a page of one at a time
        (2, 0, 500, [2, 1]),
        (2, 1, 1, [1, 0]),
        (5, 2, 2, [0]),
        (1, 3, 500, []),
    ],
)
def test_a_window_of_runs_is_newest_first_whatever_the_page_size(
    three_waiting: tuple[Path, list[str]], limit: int, offset: int, page_size: int, want: list[int]
) -> None:
    db, run_ids = three_waiting
    with closing(Store.open_readonly(str(db))) as store:
        window = runs_window(store, limit, offset, page_size)
    assert [s.run.id for s in window] == [run_ids[n] for n in want]


@pytest.mark.parametrize("page_size", [1, 2, 500])
def test_a_runs_events_read_in_pages_are_every_event_once_in_order(
    three_waiting: tuple[Path, list[str]], page_size: int
) -> None:
    db, run_ids = three_waiting
    with closing(Store.open_readonly(str(db))) as store:
        whole = store.events_of(run_ids[0], 0, 500)
        paged = [e for page in run_event_pages(store, run_ids[0], page_size) for e in page]
    assert len(whole) > 2
    assert [e.seq for e in paged] == [e.seq for e in whole]


def test_an_approvals_reason_is_the_one_its_request_event_recorded(three_waiting: tuple[Path, list[str]]) -> None:
    db, run_ids = three_waiting
    with closing(Store.open_readonly(str(db))) as store:
        approval = store.approvals_of(run_ids[1])[0]
        requested = list(event_payloads(store, run_ids[1], "approval.requested"))
        other_step = list(event_payloads(store, run_ids[1], "approval.requested", step_id="no-such-step"))
        reason = approval_reason(store, approval)
    assert [p["approval_id"] for p in requested] == [approval.id]
    assert other_step == []
    assert reason == requested[0]["reason"]
    assert reason
