"""A wall clock stepped backwards while the scheduler runs (SPEC section 4): nothing is
re-fired, the cursor never moves back, and firing resumes at the next planned instant
once the wall clock reaches it (the scheduler waits on a monotonic timer, re-reading the
wall clock at least every POLL_INTERVAL, so a step in either direction is seen promptly)."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.config import Config
from cronctl.jobs.model import CommandTarget, JobDefinition
from cronctl.runtime import Scheduler
from cronctl.store import Store, open_store

pytestmark = pytest.mark.slow


def test_clock_stepped_back_never_refires_and_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    offset = [timedelta(0)]

    def clock() -> datetime:
        return datetime.now(UTC) + offset[0]

    config = Config(path=None, base_dir=tmp_path, database=url, jobs_dir=tmp_path,
                    node_id="n1", heartbeat_interval=timedelta(seconds=1),
                    shutdown_timeout=timedelta(seconds=2))
    job = JobDefinition(id="tick", target=CommandTarget(("true",)), every=timedelta(seconds=1))
    store = open_store(url, node_id="n1")
    sched = Scheduler(config, [job], store, clock=clock)
    sched.start()
    try:
        time.sleep(2.3)
        before = sched.stats()["fired"]
        offset[0] = timedelta(seconds=-2)  # NTP steps the clock back 2 s
        time.sleep(1.5)
        assert sched.stats()["fired"] == before  # the instants it already ran: not again
        time.sleep(2.0)
        assert sched.stats()["fired"] > before  # ...then on from the next one
    finally:
        sched.stop()
    rows = store.list_executions(job_id="tick", limit=None)
    cursor = store.get_schedule("tick")
    store.close()
    per_instant = collections.Counter(r.scheduled_at for r in rows)
    assert max(per_instant.values()) == 1, per_instant
    instants = sorted(per_instant)
    assert all((b - a) == timedelta(seconds=1) for a, b in zip(instants, instants[1:],
                                                               strict=False)), instants
    assert cursor is not None and cursor.cursor == instants[-1]


def _one_slow_job(tmp_path: Path, timeout: float, sleep: float,
                  clock: Callable[[], datetime]) -> tuple[Scheduler, Store]:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    config = Config(path=None, base_dir=tmp_path, database=url, jobs_dir=tmp_path,
                    node_id="n1", heartbeat_interval=timedelta(seconds=1),
                    shutdown_timeout=timedelta(seconds=2))
    job = JobDefinition(id="slow", target=CommandTarget(("sleep", str(sleep))),
                        every=timedelta(hours=1), timeout=timedelta(seconds=timeout),
                        max_attempts=1, kill_timeout=timedelta(seconds=1))
    store = open_store(url, node_id="n1")
    return Scheduler(config, [job], store, clock=clock), store


def _wait_for(predicate: Callable[[], object], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("step", [timedelta(seconds=-90), timedelta(hours=1)])
def test_a_timeout_is_measured_on_the_monotonic_clock(tmp_path: Path, step: timedelta) -> None:
    """A 2 s timeout ends a `sleep 30` 2 s after it started, whether the wall clock then
    steps back 90 s (on the wall clock it would wait 92 s) or an hour ahead (it would
    end the attempt at once, and so it must not end it before 2 s either)."""
    offset = [timedelta(0)]

    def clock() -> datetime:
        return datetime.now(UTC) + offset[0]

    sched, store = _one_slow_job(tmp_path, timeout=2, sleep=30, clock=clock)
    sched.start()
    try:
        sched.trigger("slow")
        assert _wait_for(lambda: store.list_executions(job_id="slow", limit=None), 5)
        started = time.monotonic()
        offset[0] = step
        assert _wait_for(lambda: store.list_executions(job_id="slow", limit=None)[0]
                         .status.value != "running", 8)
        took = time.monotonic() - started
    finally:
        sched.stop()
    [row] = store.list_executions(job_id="slow", limit=None)
    store.close()
    assert row.status.value == "dead_letter" and "timed out" in (row.error or ""), row
    assert 1.0 < took < 6.0, took
