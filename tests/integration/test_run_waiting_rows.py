"""Tracked fires waiting for a slot have their rows written while they wait (``pending``),
become ``running`` when they start, and leave no ``pending`` row behind when they
expire or when the scheduler stops before their turn."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.config import Config
from cronctl.context import JobContext
from cronctl.jobs.model import ExecutionStatus, Isolation, JobDefinition, PythonTarget
from cronctl.runtime import Scheduler
from cronctl.store import ExecutionRecord, Store, open_store

pytestmark = pytest.mark.slow
S = ExecutionStatus


def slow(ctx: object) -> None:
    time.sleep(0.05)


def slower(ctx: object) -> None:
    time.sleep(0.4)


def until_cancelled(ctx: JobContext) -> None:
    deadline = time.monotonic() + 10
    while not ctx.is_cancelled() and time.monotonic() < deadline:
        time.sleep(0.02)


def _burst(tmp_path: Path, n: int, slots: int, handler: str, **job: object
           ) -> tuple[Scheduler, Store, datetime]:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = open_store(url, node_id="n1")  # (migrating first: slow on a loaded machine)
    instant = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    cron = f"{instant.second} {instant.minute} {instant.hour} * * *"
    jobs = [JobDefinition(id=f"j{i:02d}", target=PythonTarget(__name__, handler),
                          isolation=Isolation.THREAD, cron=cron, tracked=True,
                          max_attempts=1, **job)  # type: ignore[arg-type]
            for i in range(n)]
    config = Config(path=None, base_dir=tmp_path, database=url, jobs_dir=tmp_path,
                    node_id="n1", tracked=True, max_concurrent_jobs=slots,
                    shutdown_timeout=timedelta(seconds=5))
    sched = Scheduler(config, jobs, store)
    sched.start()
    assert datetime.now(UTC) < instant, "the scheduler took too long to start"
    return sched, store, instant


def _pending_rows(store: Store, at_least: int, instant: datetime,
                  status: ExecutionStatus = S.PENDING) -> list[ExecutionRecord]:
    """The rows in ``status`` once there are ``at_least`` (polled: the burst may start a
    little late on a loaded machine), or what there is 5 s after ``instant``."""
    deadline = instant + timedelta(seconds=5)
    while True:
        rows = store.list_executions(status=status, limit=None)
        if len(rows) >= at_least or datetime.now(UTC) > deadline:
            return list(rows)
        time.sleep(0.01)


def test_waiting_fires_have_pending_rows_then_run(tmp_path: Path) -> None:
    sched, store, instant = _burst(tmp_path, 30, 3, "slow")
    try:
        waiting = store.list_executions(status=S.PENDING, limit=None)
        assert not waiting
        waiting = _pending_rows(store, 10, instant)  # ~20 wait for a slot, with their rows
        assert len(waiting) >= 10, waiting
        assert all(r.started_at is None and r.node_id == "n1" for r in waiting)
        assert sched.wait_idle(20)
    finally:
        sched.stop()
    rows = store.list_executions(limit=None)
    store.close()
    assert len(rows) == 30 and {r.job_id for r in rows} == {f"j{i:02d}" for i in range(30)}
    assert {r.status for r in rows} == {S.SUCCEEDED}, rows
    assert all(r.started_at is not None and r.finished_at is not None
               and r.created_at <= r.started_at <= r.finished_at for r in rows)
    assert all(r.scheduled_at == instant and r.attempt == 1 for r in rows)


def test_expired_waiters_leave_skip_records_and_no_row(tmp_path: Path) -> None:
    sched, store, instant = _burst(tmp_path, 8, 1, "slower",
                                   misfire_threshold=timedelta(seconds=1))
    try:
        assert _pending_rows(store, 1, instant)  # written while waiting
        assert sched.wait_idle(20)
    finally:
        sched.stop()
    rows = store.list_executions(limit=None)
    skips = store.list_skips(limit=None)
    store.close()
    ran = {r.job_id for r in rows}
    expired = {s.job_id for s in skips if s.reason == "expired"}
    assert {r.status for r in rows} == {S.SUCCEEDED}, rows  # no pending row is left
    assert ran and expired and ran.isdisjoint(expired) and len(ran | expired) == 8


def test_rows_of_fires_still_waiting_at_stop_are_deleted(tmp_path: Path) -> None:
    sched, store, instant = _burst(tmp_path, 10, 1, "until_cancelled",
                                   kill_timeout=timedelta(seconds=1))
    try:
        assert len(_pending_rows(store, 5, instant)) >= 5
        # (a crowded instant is decided a moment ahead: the waiting rows come first)
        assert _pending_rows(store, 1, instant, S.RUNNING)
    finally:
        sched.stop(0.3)
    rows = store.list_executions(limit=None)
    store.close()
    assert rows and len(rows) < 10, rows  # the fires that never started: no row
    assert S.PENDING not in {r.status for r in rows}, rows
    # Only the one that held the slot ran, and nothing is left running: the fires that
    # were waiting did not start when the stop cancelled it (SPEC: stop firing).
    assert len(rows) == 1 and rows[0].status is S.CANCELLED, rows


def test_a_slot_freed_during_a_graceful_stop_starts_no_waiting_fire(tmp_path: Path) -> None:
    sched, store, instant = _burst(tmp_path, 5, 1, "slower")
    try:
        assert _pending_rows(store, 1, instant, S.RUNNING)
        time.sleep(0.1)
    finally:
        sched.stop()  # the running one finishes (0.4 s); the 4 waiting do not start
    rows = store.list_executions(limit=None)
    store.close()
    assert [r.status for r in rows] == [S.SUCCEEDED], rows
