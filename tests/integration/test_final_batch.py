"""FinalBatch on a real SQLite store: a guarded row's restamped start is never lost to
its final status, whichever flush writes them (the fencing tokens of a job must rise
with the starts of its attempts: SPEC section 4, "Fencing")."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.runtime.fire.batches import FinalBatch
from cronctl.store import Store, occurrence_id, open_store
from cronctl.store.base import StoreUnavailable

S = ExecutionStatus
T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
T1, T2 = T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)


def _running(store: Store, job: str) -> int:
    eid = store.try_insert_execution(
        job_id=job, occurrence_id=occurrence_id(job, T0), scheduled_at=T0, attempt=1,
        origin=Origin.CRON, node_id="n1", scope_node=None, fencing_token=3,
        status=S.RUNNING, started_at=T0, now=T0)
    assert eid is not None
    return eid


def _batch(store: Store, later: list[Callable[[], object]]) -> FinalBatch:
    return FinalBatch(store, later.append, lambda eid: None, lambda: T2)


def test_a_restamp_and_its_final_status_in_one_flush(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    try:
        queued: list[Callable[[], object]] = []
        batch = _batch(store, queued)
        a, b = _running(store, "a"), _running(store, "b")
        batch.restamp(a, T1)
        batch.restamp(b, T1)
        batch.add(a, S.SUCCEEDED, None, 3, prompt=True)
        assert queued  # the restamp asked for a flush at once
        batch.flush()  # (here on the calling thread, as the scheduler thread may)
        ra, rb = store.get_execution(a), store.get_execution(b)
        assert ra is not None and rb is not None
        assert (ra.status, ra.started_at, ra.finished_at) == (S.SUCCEEDED, T1, T2)
        assert (rb.status, rb.started_at, rb.finished_at) == (S.RUNNING, T1, None)
        batch.add(b, S.FAILED, "boom", 3)
        batch.flush()
        rb = store.get_execution(b)
        assert rb is not None and (rb.status, rb.started_at, rb.error) == (S.FAILED, T1, "boom")
        for task in queued:  # the flushes handed on find nothing left to write
            task()
        assert store.get_execution(a) == ra
    finally:
        store.close()


def test_a_fenced_final_status_is_kept_on_the_row_and_told(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    try:
        batch = _batch(store, [])
        told: list[tuple[int, S, S | None, datetime]] = []
        batch.on_fenced = lambda row, status, at: told.append(
            (row.id, status, row.fenced_status, at))
        eid = _running(store, "a")
        # another node took the attempt over: recorded lost, with a newer token elsewhere
        assert store.transition(eid, S.RUNNING, S.LOST, error="lost", finished_at=T1)
        batch.add(eid, S.SUCCEEDED, None, 3)
        batch.flush()
        row = store.get_execution(eid)
        assert row is not None
        assert (row.status, row.fenced_status, row.fenced_at) == (S.LOST, S.SUCCEEDED, T2)
        assert told == [(eid, S.SUCCEEDED, S.SUCCEEDED, T2)]
    finally:
        store.close()


class _Outage:
    """The real store, whose next ``transitions`` fails as if the server had gone."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.down = True

    def transitions(self, changes):  # type: ignore[no-untyped-def]
        if self.down:
            raise StoreUnavailable("connection refused")
        return self._store.transitions(changes)

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def test_the_finished_line_is_written_once_the_final_status_landed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 26: "finished ... succeeded" was logged 21 ms before a SIGKILL, and the row
    was then recovered ``lost`` and run again: the line must follow the write."""
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    try:
        outage = _Outage(store)
        batch = FinalBatch(outage, lambda task: None, lambda eid: None,  # type: ignore[arg-type]
                           lambda: T2)
        ok, bad = _running(store, "ok"), _running(store, "bad")
        caplog.set_level(logging.INFO, "cronctl.runtime")
        batch.add(ok, S.SUCCEEDED, None, 3, job_id="ok")
        batch.add(bad, S.FAILED, "exit 2", 3, job_id="bad")
        with pytest.raises(StoreUnavailable):
            batch.flush()
        assert [r.getMessage() for r in caplog.records if "finished" in r.getMessage()] == []
        outage.down = False
        batch.flush()
        lines = [(r.levelname, r.getMessage()) for r in caplog.records
                 if "finished" in r.getMessage()]
        assert lines == [("INFO", f"finished job=ok exec={ok} status=succeeded"),
                         ("WARNING", f"finished job=bad exec={bad} status=failed error=exit 2")]
        assert store.get_execution(ok).status is S.SUCCEEDED  # type: ignore[union-attr]
    finally:
        store.close()
