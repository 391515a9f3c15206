"""Rows written for tracked fires while they wait for a slot.

In a burst bigger than ``max_concurrent_jobs`` the first fires get their rows
(``running``) and start; the rest wait for a slot. Writing each waiter's row when its
slot frees cost one transaction per wake (a few fires each): 100 to 200 commits for a
1,000-fire burst, most of its drain time (bench/PROFILE.md). Instead the waiters' rows
are written ahead, ``pending``, up to :data:`WRITE_AHEAD` per wake in multi-row INSERTs,
once the wake's own fires are dispatched; when a waiter's :class:`~cronctl.core.Fire`
comes it is dispatched at once (its row is committed), and the row becomes ``running``
on the I/O thread (:meth:`~cronctl.runtime.batches.FinalBatch.started`), ahead of its
final status. A waiter whose row is not written yet when its slot frees takes the usual
path (its row inserted ``running`` before dispatch).

Only first attempts of jobs without guard locks: a single_instance row is its cluster
election and a serial group's lock is taken with the row, both at the start. A waiter
that does not start (expired, superseded, removed, released) has its row deleted, and so
do the rows still waiting at shutdown. A scheduler killed meanwhile leaves ``pending``
rows that its next start recovers like any pending row (the attempt runs then).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from cronctl.core import Enqueue, Fire, needs_store
from cronctl.jobs.model import ExecutionStatus, JobDefinition
from cronctl.runtime.records import first_line, locks_for
from cronctl.store.base import NewExecution, Store, StoreUnavailable

log = logging.getLogger("cronctl.runtime")
WRITE_AHEAD = 250  # waiters' rows written per wake at most
_Key = tuple[str, str]  # (job, occurrence) of a first attempt


class WaiterRows:
    """The waiters' rows of this process (scheduler thread only)."""

    def __init__(self, store: Store, *, node_id: str,
                 submit: Callable[[Callable[[], object]], None],
                 unavailable: Callable[[StoreUnavailable], None]) -> None:
        self._store = store
        self._node_id = node_id
        self._submit = submit
        self._unavailable = unavailable
        self._wanted: dict[_Key, tuple[Enqueue, JobDefinition]] = {}  # FIFO: no row yet
        self._rows: dict[_Key, tuple[int, datetime]] = {}  # written: (row id, planned)
        self._jobs: dict[str, set[_Key]] = {}  # job -> its keys in either
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
        if key in self._rows:
            return
        self._wanted[key] = (a, job)
        self._jobs.setdefault(a.job_id, set()).add(key)

    def write(self, now: datetime) -> None:
        """The rows of the oldest waiters without one, in one INSERT (end of a wake)."""
        if not self._wanted:
            return
        keys: list[_Key] = []
        rows: list[NewExecution] = []
        for key, (a, job) in self._wanted.items():
            keys.append(key)
            rows.append(NewExecution(
                job_id=a.job_id, occurrence_id=key[1], scheduled_at=a.planned, attempt=1,
                origin=a.origin, node_id=self._node_id, scope_node=self._node_id,
                target=str(job.target), status=ExecutionStatus.PENDING, created_at=now))
            if len(rows) >= WRITE_AHEAD:
                break
        for key in keys:
            del self._wanted[key]
        try:
            ids = self._store.insert_executions(rows)
        except StoreUnavailable as exc:
            self._unavailable(exc)
            ids = [None] * len(rows)
        except Exception as exc:  # their fires write their rows when they start
            log.debug("waiting rows not written ahead: %s", first_line(exc))
            ids = [None] * len(rows)
        for key, row, new_id in zip(keys, rows, ids, strict=True):
            if new_id is None:  # a row exists: the fire finds it (and loses) when it starts
                self._unindex(key)
            else:
                self._rows[key] = (new_id, row.scheduled_at)

    def take(self, a: Fire) -> int | None:
        """The row written ahead for ``a`` (about to be dispatched), if any."""
        if a.attempt != 1 or not self._jobs:
            return None
        key = (a.job_id, a.occurrence_id)
        self._wanted.pop(key, None)
        got = self._rows.pop(key, None)
        self._unindex(key)
        return None if got is None else got[0]

    def forget(self, a: Fire) -> None:
        """``a`` will not start here: delete its row."""
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
            at = wanted[0].planned if wanted is not None else self._rows[key][1]
            if planned <= at <= newest:
                self._wanted.pop(key, None)
                row = self._rows.pop(key, None)
                if row is not None:
                    gone.append(row[0])
                self._unindex(key)
        if gone:
            self._discard(gone)

    def discard_all(self) -> None:
        """At shutdown (I/O thread, after the scheduler thread ended): delete every row
        still waiting."""
        rows = [row for row, _planned in self._rows.values()]
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
