"""Retries written ahead: the next attempt of a failed occurrence is a ``pending`` row from
the moment the failure is recorded, so a scheduler stopped or killed during the backoff
loses no retry (recovery claims the row after what is left of the backoff; see
:meth:`cronctl.core.SchedulerCore.start`). In this process the retry's :class:`Fire`
claims the row (``pending`` -> ``running``) instead of inserting one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from cronctl.core import Fire, Retry
from cronctl.errors import first_line
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Mode
from cronctl.runtime.logsetup import ids
from cronctl.store.base import NewExecution, Store, StoreUnavailable

log = logging.getLogger("cronctl.runtime")
_Key = tuple[str, str, int]  # (job, occurrence, attempt)


class RetryRows:
    """The pending rows this process wrote ahead, by (job, occurrence, attempt). Used on
    the scheduler thread only; closing a row goes through ``submit`` (the I/O thread)."""

    def __init__(self, store: Store, *, node_id: str, clock: Callable[[], datetime],
                 submit: Callable[[Callable[[], object]], None],
                 unavailable: Callable[[StoreUnavailable], None]) -> None:
        self._store = store
        self._node_id = node_id
        self._clock = clock
        self._submit = submit
        self._unavailable = unavailable
        self._rows: dict[_Key, tuple[int, datetime]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def write(self, a: Retry, job: JobDefinition) -> None:
        single = job.mode is Mode.SINGLE_INSTANCE
        row = NewExecution(
            job_id=job.id, occurrence_id=a.occurrence_id, scheduled_at=a.planned,
            attempt=a.attempt, origin=a.origin, node_id=self._node_id,
            scope_node=None if single else self._node_id, target=str(job.target),
            status=ExecutionStatus.PENDING, created_at=self._clock())
        try:
            [execution_id] = self._store.insert_executions([row])
        except StoreUnavailable as exc:
            self._unavailable(exc)  # the retry lives in memory (the core holds it)
            return
        except Exception as exc:
            log.warning("could not write the retry of job=%s attempt=%d ahead (it runs, "
                        "but not after a restart): %s", job.id, a.attempt, first_line(exc),
                        extra=ids(job.id))
            return
        if execution_id is not None:
            self._rows[(job.id, a.occurrence_id, a.attempt)] = (execution_id, a.planned)

    def row_for(self, a: Fire) -> int | None:
        """The pending row this attempt claims: recovered (``a.row``) or written here."""
        if a.row is not None or not self._rows or a.attempt == 1:
            return a.row
        ahead = self._rows.get((a.job_id, a.occurrence_id, a.attempt))
        return None if ahead is None else ahead[0]

    def forget(self, a: Fire) -> None:
        """Claimed (by this node or another): nothing left to do for it here."""
        if self._rows:
            self._rows.pop((a.job_id, a.occurrence_id, a.attempt), None)

    def close(self, a: Fire, why: str) -> None:
        """The attempt will not run here: close its pending row if it is still pending
        (else another node claimed it), so that no later recovery runs what this node
        dropped on purpose."""
        row = a.row
        if self._rows:
            ahead = self._rows.pop((a.job_id, a.occurrence_id, a.attempt), None)
            if ahead is not None:
                row = ahead[0]
        if row is not None:
            self._close_row(row, why)

    def close_removed(self, job_id: str, planned: datetime) -> None:
        """A reload removed the job while this retry waited for its backoff."""
        for key, (row, at) in list(self._rows.items()):
            if key[0] == job_id and at == planned:
                del self._rows[key]
                self._close_row(row, "the job was removed")

    def _close_row(self, row: int, why: str) -> None:
        if not self._store.persistent:
            return
        at, store = self._clock(), self._store
        self._submit(lambda: store.transition(
            row, ExecutionStatus.PENDING, ExecutionStatus.FAILED, error=f"not run: {why}",
            finished_at=at))
