"""``verify -file EXPORT [-head SEQ:HASH]``: an export checked on its own, offline.

No database is opened. Every record's hash is computed again from its own fields and the
hash before it (the chain's rule, ``store.chain_hash``); each record must name the previous
record's hash and follow it by one. An export that starts at seq 1 is checked from the
genesis; one that starts later (``export -since``) trusts the hash written before its first
event, which a head kept elsewhere (``-head``) then holds to account.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agentrt_proxy.cli._export import FIELDS
from agentrt_proxy.errors import InvalidValue
from agentrt_proxy.store import chain_hash
from agentrt_proxy.text import cli_text, escaping


@dataclass(frozen=True)
class Record:
    line: int
    seq: int
    at: str
    run_id: str
    step_id: str
    type: str
    payload: str
    prev_hash: str
    hash: str


class BadRecord(InvalidValue):
    """A line of the export that is not a record (it becomes one line of the report)."""


@dataclass
class FileReport:
    lines: list[str]
    intact: bool
    broken_seq: int = 0


def check(path: str, head: tuple[int, str] | None) -> FileReport:
    """Walk the export; stop at the first break and name its sequence number."""
    lines: list[str] = []
    count, first, prev_seq, prev_hash, seen_head = 0, 0, 0, "", ""
    try:
        for rec in _records(path):
            problem = _link_problem(rec, count, prev_seq, prev_hash)
            if problem:
                return FileReport([cli_text.VERIFY_FILE_BROKEN.format(seq=rec.seq, detail=problem)], False, rec.seq)
            if count == 0:
                first = rec.seq
                if rec.seq > 1:
                    lines.append(cli_text.VERIFY_FILE_FROM_MIDDLE.format(seq=rec.seq, prev=_short(rec.prev_hash)))
            if head is not None and rec.seq == head[0]:
                seen_head = rec.hash
            count, prev_seq, prev_hash = count + 1, rec.seq, rec.hash
    except BadRecord as err:
        return FileReport([cli_text.VERIFY_FILE_BROKEN.format(seq=prev_seq + 1, detail=err)], False, prev_seq + 1)
    if not count:
        return FileReport([cli_text.VERIFY_FILE_EMPTY.format(path=escaping.go_quote(path))], False)
    lines.append(cli_text.VERIFY_FILE_INTACT.format(count=count, first=first, last=prev_seq, hash=prev_hash))
    intact = True
    if head is not None:
        if not seen_head:
            lines.append(cli_text.VERIFY_FILE_HEAD_MISSING.format(seq=head[0]))
            intact = False
        elif seen_head != head[1]:
            lines.append(cli_text.VERIFY_FILE_HEAD_CHANGED.format(seq=head[0], found=seen_head, kept=head[1]))
            intact = False
        else:
            lines.append(cli_text.VERIFY_FILE_HEAD_MATCHES.format(seq=head[0]))
    return FileReport(lines, intact)


def _link_problem(rec: Record, count: int, prev_seq: int, prev_hash: str) -> str:
    if count and rec.seq != prev_seq + 1:
        return cli_text.VERIFY_FILE_GAP.format(prev=prev_seq, seq=rec.seq)
    if count and rec.prev_hash != prev_hash:
        return cli_text.VERIFY_FILE_PREV.format(prev=prev_seq)
    if not count and rec.seq == 1 and rec.prev_hash:
        return cli_text.VERIFY_FILE_FIRST
    if chain_hash(rec.prev_hash, rec.seq, rec.run_id, rec.step_id, rec.at, rec.type, rec.payload) != rec.hash:
        return cli_text.VERIFY_FILE_HASH
    return ""


def _short(text: str) -> str:
    return escaping.clean(text, 128) or '""'


def _records(path: str) -> Iterator[Record]:
    """The export's records, JSON lines or CSV (told apart by the first line)."""
    with open(path, encoding="utf-8", newline="") as f:
        first = f.readline()
        f.seek(0)
        if first.startswith("{"):
            for number, line in enumerate(f, 1):
                if line.strip():
                    yield _record(number, _json_line(number, line))
            return
        reader = csv.reader(f)
        header = next(reader, None)
        if header is not None and tuple(header) != FIELDS:
            raise BadRecord(cli_text.VERIFY_FILE_BAD_LINE.format(line=1, detail=cli_text.VERIFY_FILE_NOT_HEADER))
        for row in reader:
            if len(row) != len(FIELDS):
                raise BadRecord(cli_text.VERIFY_FILE_BAD_LINE.format(line=reader.line_num, detail="wrong field count"))
            yield _record(reader.line_num, dict(zip(FIELDS, row, strict=True)))


def _json_line(number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        raise BadRecord(cli_text.VERIFY_FILE_BAD_LINE.format(line=number, detail="not JSON")) from None
    if not isinstance(value, dict):
        raise BadRecord(cli_text.VERIFY_FILE_BAD_LINE.format(line=number, detail="not an object"))
    return value


def _record(number: int, fields: dict[str, Any]) -> Record:
    try:
        seq = fields["seq"]
        seq = int(seq) if isinstance(seq, str) and seq.isascii() and seq.isdigit() else seq
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            raise ValueError
        texts = [fields[name] for name in FIELDS[1:]]
        if not all(isinstance(t, str) for t in texts):
            raise ValueError
    except (KeyError, ValueError):
        raise BadRecord(
            cli_text.VERIFY_FILE_BAD_LINE.format(line=number, detail=cli_text.VERIFY_FILE_NOT_RECORD)
        ) from None
    return Record(number, seq, *texts)


def run(path: str, head: tuple[int, str] | None) -> int:
    try:
        report = check(path, head)
    except (OSError, UnicodeDecodeError) as err:
        detail = getattr(err, "strerror", None) or str(err)
        sys.stderr.write(cli_text.VERIFY_FILE_CANNOT_READ.format(path=escaping.go_quote(path), detail=detail) + "\n")
        return 1
    sys.stdout.write("".join(escaping.sanitize(line) + "\n" for line in report.lines))
    return 0 if report.intact else 1


def wants_file(argv: list[str]) -> bool:
    """Whether ``verify``'s arguments name an export (-file, in any of the flag spellings)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg.lstrip("-").partition("=")[0] == "file" and arg.startswith("-"):
            return True
    return False


def command(argv: list[str]) -> int:
    from agentrt_proxy.cli import _flags as flags
    from agentrt_proxy.cli import _operator_frame as frame
    from agentrt_proxy.cli import _verify_chain as verify_chain
    from agentrt_proxy.cli._flags import UsageError

    fl = flags.parse(argv, options=("file", "head", "db", "config"), switches=())
    frame.no_positionals(fl)
    if fl.get("db") is not None or fl.get("config") is not None:
        raise UsageError(cli_text.VERIFY_FILE_WITH_DB)
    path = fl.get("file") or ""
    if not path:
        raise UsageError(cli_text.VERIFY_FILE_NEED_PATH)
    return run(path, verify_chain.parse_head(fl.get("head")))
