"""Rows written for tracked fires while they wait for a slot.

In a burst bigger than ``max_concurrent_jobs`` the first fires get their rows
(``running``) and start; the rest wait for a slot. Writing each waiter's row when its
slot frees cost one transaction per wake (a few fires each): 100 to 200 commits for a
1,000-fire burst, most of its drain time (bench/PROFILE.md). Instead the waiters' rows
are written ahead, ``pending``, in multi-row INSERTs on the I/O thread (one batch of
up to :data:`WRITE_AHEAD` rows at a time, the first smaller), once the wake's own fires
are dispatched: the scheduler thread goes on dispatching while they are written. When a
waiter's :class:`~cronctl.core.Fire` comes it is dispatched at once if its row is
committed, and the row becomes ``running`` on the I/O thread
(:meth:`~cronctl.runtime.fire.batches.FinalBatch.started`), ahead of its final status; if its
row is being written, the fire is held until the batch lands (:meth:`WaiterRows.land`,
on the scheduler thread, woken by ``post``). A waiter whose row was not asked for yet
when its slot frees takes the usual path (its row inserted ``running`` before
dispatch).

Only first attempts of jobs without guard locks: a single_instance row is its cluster
election and a serial group's lock is taken with the row, both at the start. A waiter
that does not start (expired, superseded, removed, released) has its row deleted, and so
do the rows still waiting at shutdown. A scheduler killed meanwhile leaves ``pending``
rows that its next start recovers like any pending row (the attempt runs then).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from datetime import datetime

from cronctl.core import Enqueue, Fire, needs_store
from cronctl.errors import first_line
from cronctl.jobs.model import ExecutionStatus, JobDefinition
from cronctl.runtime.fire.records import locks_for
from cronctl.store.base import NewExecution, Store, StoreUnavailable

log = logging.getLogger("cronctl.runtime")
WRITE_AHEAD = 250  # waiters' rows per batch at most
WRITE_FIRST = 50  # ... the first batch of a burst: the next slots wait for it
_Key = tuple[str, str]  # (job, occurrence) of a first attempt
IN_FLIGHT = -1  # :meth:`WaiterRows.take`: the fire's row is being written; hold the fire


class WaiterRows:
    """The waiters' rows of this process (scheduler thread only, but for the batch the
    I/O thread writes and hands back under a lock)."""

    def __init__(self, store: Store, *, node_id: str,
                 submit: Callable[[Callable[[], object]], None],
                 unavailable: Callable[[StoreUnavailable], None],
                 post: Callable[[], None] = lambda: None) -> None:
        self._store = store
        self._node_id = node_id
        self._submit = submit
        self._unavailable = unavailable
        self._post = post  # wakes the scheduler thread once a batch landed
        self._wanted: dict[_Key, tuple[Enqueue, JobDefinition]] = {}  # FIFO: no row yet
        self._rows: dict[_Key, tuple[int, datetime]] = {}  # written: (row id, planned)
        self._inflight: dict[_Key, datetime] = {}  # being written: planned
        self._dropped: set[_Key] = set()  # in flight, but will not start: delete on landing
        self._jobs: dict[str, set[_Key]] = {}  # job -> its keys in any of the three
        self._lock = threading.Lock()
        self._landed: list[tuple[list[_Key], list[int | None]]] = []  # (under the lock)
        self._first = True  # the next batch is the first of a burst
        self.enabled = True  # False while no job could use it (see :meth:`jobs_are`)

    def jobs_are(self, jobs: Iterable[JobDefinition]) -> None:
        """The job set (at start and each reload)."""
        self.enabled = any(needs_store(job) and not locks_for(job) for job in jobs)

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def wanted(self) -> bool:
        """Some waiters have no row yet."""
        return bool(self._wanted)

    def want(self, a: Enqueue, job: JobDefinition) -> None:
        """``a`` waits for a slot: write its row ahead (at :meth:`write`) if it may."""
        if a.occurrence_id is None or not needs_store(job) or locks_for(job):
            return
        key = (a.job_id, a.occurrence_id)
        if key in self._rows or key in self._inflight:
            return
        self._wanted[key] = (a, job)
        self._jobs.setdefault(a.job_id, set()).add(key)

    def write(self, now: datetime) -> None:
        """Hand the rows of the oldest waiters without one to the I/O thread, in one
        INSERT (end of a wake; one batch in flight at a time)."""
        if not self._wanted or self._inflight:
            return
        limit = WRITE_FIRST if self._first else WRITE_AHEAD
        self._first = False
        keys: list[_Key] = []
        rows: list[NewExecution] = []
        for key, (a, job) in self._wanted.items():
            keys.append(key)
            rows.append(NewExecution(
                job_id=a.job_id, occurrence_id=key[1], scheduled_at=a.planned, attempt=1,
                origin=a.origin, node_id=self._node_id, scope_node=self._node_id,
                target=str(job.target), status=ExecutionStatus.PENDING, created_at=now))
            if len(rows) >= limit:
                break
        for key, row in zip(keys, rows, strict=True):
            del self._wanted[key]
            self._inflight[key] = row.scheduled_at
        self._submit(lambda: self._insert(keys, rows))

    def _insert(self, keys: list[_Key], rows: list[NewExecution]) -> None:
        """The I/O thread: write one batch, hand the ids back."""
        try:
            ids = self._store.insert_executions(rows)
        except StoreUnavailable as exc:
            self._unavailable(exc)
            ids = [None] * len(rows)
        except Exception as exc:  # their fires write their rows when they start
            log.debug("waiting rows not written ahead: %s", first_line(exc))
            ids = [None] * len(rows)
        with self._lock:
            self._landed.append((keys, ids))
        self._post()

    def land(self) -> bool:
        """Take in the batches written since the last call; True if there were any (the
        fires held for them can go on)."""
        with self._lock:
            landed, self._landed = self._landed, []
        gone: list[int] = []
        for keys, ids in landed:
            for key, new_id in zip(keys, ids, strict=True):
                planned = self._inflight.pop(key)
                if key in self._dropped:
                    self._dropped.discard(key)
                    self._unindex(key)
                    if new_id is not None:
                        gone.append(new_id)
                elif new_id is None:  # a row exists: the fire finds it (and loses) at start
                    self._unindex(key)
                else:
                    self._rows[key] = (new_id, planned)
        if gone:
            self._discard(gone)
        if not self._wanted and not self._inflight:
            self._first = True  # the burst is over: the next one starts small again
        return bool(landed)

    def take(self, a: Fire) -> int | None:
        """The row written ahead for ``a`` (about to be dispatched), if any;
        :data:`IN_FLIGHT` while it is being written."""
        if a.attempt != 1 or not self._jobs:
            return None
        key = (a.job_id, a.occurrence_id)
        if key in self._inflight:
            return IN_FLIGHT
        self._wanted.pop(key, None)
        got = self._rows.pop(key, None)
        self._unindex(key)
        return None if got is None else got[0]

    def row(self, job_id: str, occurrence_id: str) -> int | None:
        """The row written for a waiter; :data:`IN_FLIGHT` while it is to be written or
        being written; None when it has none (its fire writes it when it starts)."""
        key = (job_id, occurrence_id)
        got = self._rows.get(key)
        if got is not None:
            return got[0]
        return IN_FLIGHT if key in self._inflight or key in self._wanted else None

    def forget(self, a: Fire) -> None:
        """``a`` will not start here: delete its row."""
        key = (a.job_id, a.occurrence_id)
        if a.attempt == 1 and key in self._inflight:
            self._dropped.add(key)
            return
        row = self.take(a)
        if row is not None:
            self._discard([row])

    def skipped(self, job_id: str, planned: datetime, last: datetime | None) -> None:
        """Instants ``planned`` .. ``last`` of ``job_id`` do not run: delete their rows."""
        keys = self._jobs.get(job_id)
        if not keys:
            return
        newest = planned if last is None else last
        gone: list[int] = []
        for key in list(keys):
            wanted = self._wanted.get(key)
            at = (wanted[0].planned if wanted is not None else
                  self._inflight[key] if key in self._inflight else self._rows[key][1])
            if not planned <= at <= newest:
                continue
            if key in self._inflight:
                self._dropped.add(key)  # deleted when its batch lands
                continue
            self._wanted.pop(key, None)
            row = self._rows.pop(key, None)
            if row is not None:
                gone.append(row[0])
            self._unindex(key)
        if gone:
            self._discard(gone)

    def discard_all(self) -> None:
        """At shutdown (I/O thread, after the scheduler thread ended, so after any batch
        it had handed over): delete every row still waiting."""
        with self._lock:  # none of these will start
            landed, self._landed = self._landed, []
        rows = [new_id for _keys, ids in landed for new_id in ids if new_id is not None]
        rows += [row for row, _planned in self._rows.values()]
        self._inflight.clear()
        self._dropped.clear()
        self._rows.clear()
        self._wanted.clear()
        self._jobs.clear()
        if rows:
            self._store.discard_pending(rows)

    def _discard(self, rows: list[int]) -> None:
        store = self._store
        self._submit(lambda: store.discard_pending(rows))

    def _unindex(self, key: _Key) -> None:
        keys = self._jobs.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._jobs[key[0]]
