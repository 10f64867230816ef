"""``export``: every event of the audit chain as a file that can be checked on its own.

Each record holds the event's sequence number, its time, its run and step, its type, its
payload exactly as stored (a string of JSON: the chain hashes those bytes), the hash of the
event before it and its own chain hash. ``verify -file`` (``_verify_file.py``) re-computes
every link from the file alone. The database is opened read-only and paged through, so a
long chain never sits in memory whole.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import TextIO

from agentrt_proxy.canonical import durations
from agentrt_proxy.canonical.clock import WALL
from agentrt_proxy.cli import _operator_frame as frame
from agentrt_proxy.cli._flags import UsageError
from agentrt_proxy.store import Event, Store, events_after
from agentrt_proxy.text import cli_text, escaping

FORMATS = ("jsonl", "csv")
FIELDS = ("seq", "at", "run_id", "step_id", "type", "payload", "prev_hash", "hash")


def command(argv: list[str]) -> int:
    fl = frame.parse(argv, ("since", "format", "o"), switches=())
    frame.no_positionals(fl)
    fmt = fl.get("format") or "jsonl"
    if fmt not in FORMATS:
        raise UsageError(cli_text.EXPORT_BAD_FORMAT.format(text=escaping.go_quote(escaping.clean(fmt, 40))))
    since = parse_since(fl.get("since"), WALL.now_ns())
    source = frame.database(fl)
    out = fl.get("o")
    return frame.guarded("export", source, lambda path: _export(path, fmt, since, out))


def parse_since(text: str | None, now_ns: int) -> int | None:
    """-since as Unix nanoseconds: an RFC 3339 time, or a Go duration meaning that long ago."""
    if text is None:
        return None
    for parse in (durations.parse_time, lambda t: now_ns - durations.parse_go(t)):
        try:
            return int(parse(text))
        except (ValueError, TypeError, durations.DurationError):
            continue
    raise UsageError(cli_text.EXPORT_BAD_SINCE.format(text=escaping.go_quote(escaping.clean(text, 100))))


def records(store: Store, since_ns: int | None) -> Iterator[tuple[Event, str]]:
    """(event, the hash before it) from the first event at or after ``since_ns`` to the head.

    Once the first event is reached every later one follows, whatever its time: the export
    is one unbroken piece of the chain, or it could not be checked on its own."""
    after, prev, started = 0, "", since_ns is None
    while True:
        page = events_after(store, after)
        for ev in page:
            if not started and _at_ns(ev.at) >= (since_ns or 0):
                started = True
            if started:
                yield ev, prev
            prev, after = ev.hash, ev.seq
        if not page:
            return


def _at_ns(at: str) -> int:
    try:
        return durations.parse_time(at)
    except (ValueError, TypeError):
        return 0  # an unreadable time is not after anything: it is exported only inside the range


def _row(ev: Event, prev: str) -> list[str | int]:
    return [ev.seq, ev.at, ev.run_id, ev.step_id, ev.type, ev.payload_json, prev, ev.hash]


def write_records(items: Iterator[tuple[Event, str]], fmt: str, out: TextIO) -> tuple[int, int, int, str]:
    """Write every record; (count, first seq, last seq, last hash)."""
    count, first, last, last_hash = 0, 0, 0, ""
    writer = csv.writer(out, lineterminator="\n") if fmt == "csv" else None
    if writer is not None:
        writer.writerow(FIELDS)
    for ev, prev in items:
        row = _row(ev, prev)
        if writer is not None:
            writer.writerow(row)
        else:
            out.write(json.dumps(dict(zip(FIELDS, row, strict=True)), ensure_ascii=False, separators=(",", ":")) + "\n")
        count, last, last_hash = count + 1, ev.seq, ev.hash
        first = first or ev.seq
    return count, first, last, last_hash


def _export(path: str, fmt: str, since: int | None, out_path: str | None) -> int:
    with frame.opened(path, writer=False) as store:
        head_seq, head_hash = store.chain_head()
        if out_path is None:
            write_records(records(store, since), fmt, sys.stdout)
            return 0
        count, first, last, _ = _write_file(out_path, lambda f: write_records(records(store, since), fmt, f))
    if count:
        sys.stderr.write(
            cli_text.EXPORT_WROTE.format(
                count=count,
                first=first,
                last=last,
                path=escaping.go_quote(out_path),
                head_seq=head_seq,
                head_hash=head_hash,
            )
            + "\n"
        )
    else:
        sys.stderr.write(cli_text.EXPORT_WROTE_NONE.format(path=escaping.go_quote(out_path)) + "\n")
    return 0


Summary = tuple[int, int, int, str]


def _write_file(out_path: str, body: Callable[[TextIO], Summary]) -> Summary:
    """Write beside the target and rename it into place: a reader never sees half an export.
    The file is the operator's alone (0600): it holds every argument the model sent."""
    directory = os.path.dirname(os.path.abspath(out_path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".export-", dir=directory)
    except OSError as err:
        raise frame.OperatorError(
            cli_text.EXPORT_CANNOT_WRITE.format(path=escaping.go_quote(out_path), detail=err.strerror or err)
        ) from None
    try:
        with open(fd, "w", encoding="utf-8", newline="") as f:
            result = body(f)
        os.replace(tmp, out_path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise frame.OperatorError(
            cli_text.EXPORT_CANNOT_WRITE.format(path=escaping.go_quote(out_path), detail=err.strerror or err)
        ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return result
