"""Group commit on the event loop: the write units of several calls in one durable COMMIT.

While more than one call is in flight (``Store.call_in_flight``), a write transaction that the
event loop begins under ``Store.nowait()`` does not commit on its own: it is a *unit*, a
savepoint in the open *group* transaction (begun by the group's first unit), and the group
commits once the loop has run what was ready to run (up to ``MAX_TURNS`` turns): the calls
woken meanwhile (the next decision, taking the rules' lock; an upstream's answer, recorded)
add their units to it. A unit that fails is rolled back to its savepoint alone (the
group's other units stay). Every call that wrote a unit waits (``durable``) until the COMMIT
of each group it joined before it acts on what it wrote: a call's start is durable before its
upstream request is sent, its outcome before the host hears it. docs/decisions/0023.

The group holds the database's lock from its BEGIN to its COMMIT, so a worker thread's write
(or read) waits for the COMMIT, and any write or snapshot read on the loop that is not a unit
commits the group first: commits stay in the order the writes were made.

A group whose COMMIT fails (or that SQLite rolled back under a failing unit) lost units
whose calls already moved on in memory, believing them written: nothing can put those calls
right, so the process stops at once (``on_lost``), as a kill would stop it; the store holds
what was committed before, which is what a restart recovers from.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import threading
from collections.abc import Callable
from typing import Protocol

import anyio

from agentrt_proxy.text.operator_text import group_commit_lost

MAX_TURNS = 8  # the most turns of the loop a group stays open waiting for more units
EXIT_GROUP_LOST = 70  # sysexits' EX_SOFTWARE: the process could not keep its own promise


class GroupLost(BaseException):
    """A group this call's units were in was never committed (only when ``on_lost`` did not
    stop the process, as in tests). A BaseException: no handler turns it into an answer."""


class Owner(Protocol):
    """What the group needs of the ``Database`` that owns it."""

    lock: threading.RLock

    @property
    def conn(self) -> sqlite3.Connection: ...

    def begin_group(self) -> None: ...
    def committed(self, group: Group) -> None: ...
    def unit_open(self) -> bool: ...


class Group:
    """One group transaction: how many units it keeps, what they stored, how it ended."""

    __slots__ = ("_event", "ended", "head", "lost", "specs", "units")

    def __init__(self) -> None:
        self._event = anyio.Event()  # set when it ended
        self.units = 0  # units released into it (a failed unit is not counted)
        self.specs: set[str] = set()  # tool_specs hashes its units wrote
        self.ended = False  # committed, or rolled back with no unit kept (then nothing to wait for)
        self.lost: BaseException | None = None  # rolled back with units kept
        self.head: tuple[int, str] | None = None  # the event chain's head as its kept units left it

    def kept(self, specs: set[str], head: tuple[int, str] | None) -> None:
        self.units += 1
        self.specs |= specs
        if head is not None:
            self.head = head

    def end(self, lost: BaseException | None) -> None:
        self.lost = lost
        self.ended = lost is None
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()


def stop_the_process(error: BaseException, units: int) -> None:
    sys.stderr.write(group_commit_lost(units, str(error)))
    sys.stderr.flush()
    os._exit(EXIT_GROUP_LOST)


class GroupCommit:
    """The group of one ``Database`` (its lock guards everything here)."""

    def __init__(self, db: Owner) -> None:
        self._db = db
        self.open: Group | None = None
        self.in_flight = 0  # calls in flight (Store.call_in_flight): with more than one, units are deferred
        self.deferring = False  # inside a nowait() block on the loop while calls are in flight
        self._joined: list[Group] = []  # the groups the current nowait() block's units joined
        self.on_lost: Callable[[BaseException, int], None] = stop_the_process

    # ------------------------------------------------------------ nowait() blocks
    def open_block(self) -> None:
        # A block that finds a group open reads what its units wrote (one connection): what it
        # decides from that waits for the same COMMIT, even if it writes nothing itself.
        self._joined = [] if self.open is None else [self.open]
        self.deferring = self.in_flight > 1 and _running_loop() is not None

    def close_block(self) -> None:
        self.deferring = False

    def joined(self) -> tuple[Group, ...]:
        """The groups the last nowait() block's units joined (read right after the block)."""
        return tuple(self._joined)

    # ------------------------------------------------------------------- units
    def join(self) -> Group:
        """The open group, begun now if there is none (its BEGIN may raise ``WouldBlock``,
        having written nothing)."""
        group = self.open
        if group is None:
            self._db.begin_group()
            group = self.open = Group()
            self._db.lock.acquire()  # held across the loop's turns until the group's COMMIT
            loop = _running_loop()
            assert loop is not None  # deferring only ever starts on a running loop
            loop.call_soon(self._commit_when_idle, group, 1)  # after the callbacks ready in this turn
        if group not in self._joined:
            self._joined.append(group)
        return group

    def undo_unit(self, group: Group, error: BaseException) -> None:
        """A unit failed: back to its savepoint, the group's other units kept."""
        conn = self._db.conn
        if group is not self.open:
            return
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK TO unit")
                conn.execute("RELEASE unit")
            except BaseException as err:
                self._end(group, lost=err)
                return
            if group.units == 0:
                self._end(group, lost=None)  # nothing kept: as a transaction rolled back
            return
        # SQLite rolled the whole transaction back (an I/O error, a full disk): the other units with it.
        self._end(group, lost=error if group.units else None)

    # ------------------------------------------------------------------- commit
    def commit_now(self) -> None:
        """COMMIT the open group, if any, unless a unit is being written (under the lock)."""
        group = self.open
        if group is None or self._db.unit_open():
            return
        try:
            self._db.conn.execute("COMMIT")
        except BaseException as err:
            self._end(group, lost=err)
            return
        self.open = None
        self._db.lock.release()
        self._db.committed(group)
        group.end(None)

    def _commit_when_idle(self, group: Group, turns: int) -> None:
        if self.open is not group:
            return  # committed already (a write or read that is not a unit came first)
        loop = asyncio.get_running_loop()
        # asyncio's queue of callbacks ready to run (CPython's event loops keep it as _ready):
        # while something else is ready, it may add a unit; give it this turn.
        if getattr(loop, "_ready", None) and turns < MAX_TURNS:
            loop.call_soon(self._commit_when_idle, group, turns + 1)
            return
        with self._db.lock:
            self.commit_now()

    def _end(self, group: Group, lost: BaseException | None) -> None:
        self.open = None
        if self._db.conn.in_transaction:
            try:
                self._db.conn.execute("ROLLBACK")
            except BaseException as err:
                lost = lost or (err if group.units else None)
        self._db.lock.release()
        if lost is not None and group.units:
            group.end(lost)
            self.on_lost(lost, group.units)
        else:
            group.end(None)  # no unit kept: nothing of it to wait for

    async def durable(self, groups: tuple[Group, ...]) -> None:
        """Returns once every group in ``groups`` is committed."""
        for group in groups:
            if not group.ended and group.lost is None:
                await group.wait()
            if group.lost is not None:
                raise GroupLost(group.lost)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
