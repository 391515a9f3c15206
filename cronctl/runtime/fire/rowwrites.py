"""Writing the rows of a wake's tracked fires before they are dispatched: new rows
(``running``; for single_instance the insert IS the election) with their guard locks,
in one transaction, and claims of the ``pending`` rows written ahead for retries and
recovered attempts; and closing the interrupted rows handed to recovery. A mixin of
:class:`~cronctl.runtime.fire.firing.Firing`, which provides the releases, deferrals and
failure reports used here."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from typing import TYPE_CHECKING

from cronctl.core import Action, CloseInterrupted, Decision, Fire
from cronctl.errors import first_line
from cronctl.jobs.model import ExecutionStatus, JobDefinition
from cronctl.runtime.fire.batches import FinalBatch
from cronctl.runtime.fire.handled import SCHEDULED, Handled
from cronctl.runtime.fire.records import Ready, fenced, new_rows
from cronctl.runtime.fire.retryrows import RetryRows
from cronctl.runtime.fire.watch import Watch
from cronctl.runtime.health import DatabaseHealth
from cronctl.runtime.io import IoWorker
from cronctl.runtime.logsetup import ids
from cronctl.store.base import Fenced, Store, StoreUnavailable

log = logging.getLogger("cronctl.runtime")
_LIVE = (ExecutionStatus.PENDING, ExecutionStatus.RUNNING)


class RowWrites:
    store: Store
    node_id: str
    clock: Callable[[], datetime]
    io: IoWorker
    handled: Handled
    retry_rows: RetryRows
    finals: FinalBatch
    watch: Watch
    ended: dict[int, datetime]
    lost_why: dict[int, str]
    lost_recoveries: set[int]
    health: DatabaseHealth
    _store_failing: bool  # a store error (not an outage) was logged

    if TYPE_CHECKING:  # provided by Firing
        def _release(self, a: Fire, now: datetime, why: str) -> Decision: ...
        def _blocked(self, r: Ready, key: str, now: datetime) -> Decision: ...
        def _unavailable(self, exc: StoreUnavailable, fires: list[Fire], now: datetime
                         ) -> Decision: ...

    def _record(self, ready: list[Ready], tracked: list[Ready], now: datetime,
                follow: list[Action]) -> list[Ready]:
        if any(r.locks for r in tracked):
            # The final statuses still batched free the guard locks of our ended
            # executions: written first, a fire does not find its job's lock held by this
            # node's own ended attempt and wait a remote retry for nothing.
            with suppress(StoreUnavailable):  # (the insert reports it)
                self.finals.flush()
        # The rows' start stamp is read as late as it can be (a guarded row's is replaced
        # after the commit, but a node killed before that keeps this one).
        now = max(now, self.clock())
        ok = self._write_rows(ready, tracked, now, follow)
        guarded = [r.execution_id for r in ok if r.locks and r.execution_id is not None]
        if guarded:
            # The row said "started" at ``now``, before its guard was taken (another node
            # may have released it meanwhile): restamp the start after the commit, so that
            # the executions of one guard never seem to overlap in the history.
            at = self.clock()
            for eid in guarded:  # (with the final statuses: never after one of them)
                self.finals.restamp(eid, at)
        return ok

    def _write_rows(self, ready: list[Ready], tracked: list[Ready], now: datetime,
                    follow: list[Action]) -> list[Ready]:
        """Insert the rows of ``tracked`` (for single_instance the insert IS the
        election) or claim the pending rows written ahead for them; returns the fires of
        ``ready`` that may be dispatched."""
        lost: set[int] = set()
        if any(r.row is not None for r in tracked):
            follow.extend(self._claim([r for r in tracked if r.row is not None], now, lost))
            tracked = [r for r in tracked if r.row is None and id(r) not in lost]
        rows = new_rows(tracked, self.node_id, now)
        try:
            ids_: list[int | Fenced | str | None] = []
            if any(row.locks or row.fenced for row in rows):
                ids_ = self.store.insert_guarded(rows)
            elif rows:
                ids_ = list(self.store.insert_executions(rows))
        except StoreUnavailable as exc:
            follow.extend(self._unavailable(exc, [r.fire for r in tracked], now).actions)
            lost.update(id(r) for r in tracked)
            return [r for r in ready if id(r) not in lost]
        except Exception as exc:
            self._store_failed(tracked[0].job, exc)
            for r in tracked:
                follow.extend(self._release(r.fire, now, f"store error: {first_line(exc)}")
                              .actions)
            lost.update(id(r) for r in tracked)
            return [r for r in ready if id(r) not in lost]
        self._store_ok()
        for r, execution_id in zip(tracked, ids_, strict=True):
            if isinstance(execution_id, int):
                r.execution_id = execution_id
                continue
            if isinstance(execution_id, Fenced):
                r.execution_id, r.token = execution_id.execution_id, execution_id.token
                continue
            if execution_id is not None:  # a guard lock held on another node
                lost.add(id(r))
                follow.extend(self._blocked(r, execution_id, now).actions)
                continue
            # Another node (or an earlier run of this one) has this attempt.
            a = r.fire
            lost.add(id(r))
            log.debug("not elected job=%s planned=%s", a.job_id, a.planned.isoformat(),
                      extra=ids(a.job_id))
            if a.origin in SCHEDULED:
                self.handled.cursor(a.job_id, a.planned)
            follow.extend(self._release(a, now, "another node runs this occurrence").actions)
        return [r for r in ready if id(r) not in lost]

    def _claim(self, claims: list[Ready], now: datetime, lost: set[int]) -> list[Action]:
        """Start the pending rows written ahead (retries, recovered pending rows): a
        claim lost means another node runs that attempt."""
        follow: list[Action] = []
        for r in claims:
            a = r.fire
            assert r.row is not None
            try:
                won: bool | Fenced | str = (
                    self.store.claim_guarded(r.row, node_id=self.node_id, fencing_token=None,
                                             started_at=now, locks=r.locks,
                                             fence=r.job.id if fenced(r) else None)
                    if r.locks or fenced(r) else
                    self.store.claim_execution(r.row, node_id=self.node_id,
                                               fencing_token=None, started_at=now))
            except StoreUnavailable as exc:
                lost.add(id(r))
                follow.extend(self._unavailable(exc, [a], now).actions)
                continue
            except Exception as exc:
                won = False
                self._store_failed(r.job, exc)
            if isinstance(won, str):  # the row stays pending: try it again later
                lost.add(id(r))
                follow.extend(self._blocked(r, won, now).actions)
                continue
            self.retry_rows.forget(a)
            if isinstance(won, Fenced):
                r.execution_id, r.token = r.row, won.token
            elif won:
                r.execution_id = r.row
            else:
                lost.add(id(r))
                follow.extend(self._release(a, now, "another node runs this attempt").actions)
        return follow

    def _store_failed(self, job: JobDefinition, exc: Exception) -> None:
        if not self._store_failing:
            self._store_failing = True
            log.error("store error; tracked fires are skipped until it works again: %s",
                      first_line(exc), extra=ids(job.id))
        else:
            log.debug("store still failing job=%s: %s", job.id, first_line(exc))

    def _store_ok(self) -> None:
        if self._store_failing:
            self._store_failing = False
            log.info("store works again")

    def _close_interrupted(self, a: CloseInterrupted) -> None:
        ended = self.ended.pop(a.execution_id, None) or self.clock()
        error = self.lost_why.pop(a.execution_id, None) or (
            "lost: its scheduler stopped before it finished; its outcome is unknown")
        if a.status is ExecutionStatus.DEAD_LETTER:
            error += "; no attempt left"
        elif a.status is ExecutionStatus.CANCELLED:
            error = ("cancelled: a cancel was requested before its scheduler stopped; "
                     "not run again")
        try:
            won = self.store.transition(a.execution_id, _LIVE, a.status, finished_at=ended,
                                        error=error)
        except Exception as exc:
            won = False
            if isinstance(exc, StoreUnavailable):
                self.health.failed(exc)
            log.warning("could not close interrupted exec=%s: %s", a.execution_id,
                        first_line(exc))
        if won:
            self.watch.interrupted(a)
            log.warning("recovered job=%s exec=%s status=%s", a.job_id, a.execution_id,
                        a.status.value, extra=ids(a.job_id, a.execution_id))
        else:
            self.lost_recoveries.add(a.execution_id)  # someone else recovers it
