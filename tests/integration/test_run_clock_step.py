"""Issue 9, finding 2: a live node whose wall clock steps is never judged dead, and a
final status refused by fencing is never silent (SPEC section 4, "Liveness never trusts
a node's wall clock", "Fencing is enforced").

Two schedulers in this process, each with its own store (on PostgreSQL its own lock
session) and an injected clock: node A's steps back 30 s while it runs a single_instance
occurrence. Node B must not recover it. Then the fencing half: the occurrence is
recovered elsewhere while A still runs it (as a false death would have it): A's final
status is refused and logged as a WARNING naming both executions."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl import processes
from cronctl.config import Config
from cronctl.jobs.model import (
    CommandTarget,
    ExecutionStatus,
    JobDefinition,
    Mode,
    Origin,
)
from cronctl.runtime import Scheduler
from cronctl.store import Store, open_store
from cronctl.store.base import ExecutionRecord, NewExecution

pytestmark = pytest.mark.slow


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


def _job(seconds: float) -> JobDefinition:
    return JobDefinition(id="slow", target=CommandTarget(("sleep", str(seconds))),
                         cron="0 0 3 * * *", mode=Mode.SINGLE_INSTANCE, max_attempts=3)


def _scheduler(tmp_path: Path, url: str, node: str, job: JobDefinition,
               clock: Callable[[], datetime]) -> tuple[Scheduler, Store]:
    config = Config(path=None, base_dir=tmp_path, database=url, jobs_dir=tmp_path,
                    node_id=node, heartbeat_interval=timedelta(seconds=1),
                    shutdown_timeout=timedelta(seconds=5))
    store = open_store(url, node_id=node)
    return Scheduler(config, [job], store, clock=clock), store


@pytest.fixture
def started() -> Iterator[list[tuple[Scheduler, Store]]]:
    running: list[tuple[Scheduler, Store]] = []
    yield running
    for sched, store in reversed(running):
        sched.stop()
        store.close()


def _wait(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _attempts(store: Store, first: ExecutionRecord) -> list[ExecutionRecord]:
    return store.executions_of_occurrence(first.job_id, first.occurrence_id)


def test_a_node_whose_clock_steps_back_is_not_judged_dead(
        tmp_path: Path, url: str, started: list[tuple[Scheduler, Store]],
        caplog: pytest.LogCaptureFixture) -> None:
    offset = [timedelta(0)]
    a, store_a = _scheduler(tmp_path, url, "node-a", _job(7),
                            lambda: datetime.now(UTC) + offset[0])
    b, store_b = _scheduler(tmp_path, url, "node-b", _job(7), lambda: datetime.now(UTC))
    a.start()
    started.append((a, store_a))
    a.trigger("slow")
    assert _wait(lambda: bool(store_b.pending_or_running()), 5)
    [first] = store_b.pending_or_running()
    b.start()
    started.append((b, store_b))
    offset[0] = timedelta(seconds=-30)  # NTP steps node A's clock back 30 s
    # heartbeat_interval 1s: a node judged by its heartbeats is expired after 3 s
    assert not _wait(lambda: len(_attempts(store_b, first)) > 1, 5.0), \
        _attempts(store_b, first)
    assert _wait(lambda: not store_b.pending_or_running(), 5)
    [only] = _attempts(store_b, first)
    assert (only.id, only.node_id, only.status) == (first.id, "node-a",
                                                      ExecutionStatus.SUCCEEDED)
    assert "recovered job=slow" not in caplog.text and "fenced" not in caplog.text


def test_a_final_status_refused_by_fencing_is_a_warning_naming_both(
        tmp_path: Path, url: str, started: list[tuple[Scheduler, Store]],
        caplog: pytest.LogCaptureFixture) -> None:
    a, store_a = _scheduler(tmp_path, url, "node-a", _job(1.5), lambda: datetime.now(UTC))
    a.start()
    started.append((a, store_a))
    other = open_store(url, node_id="node-b")
    try:
        a.trigger("slow")
        assert _wait(lambda: bool(other.pending_or_running()), 5)
        [first] = other.pending_or_running()
        other.register_node("node-b", socket.gethostname(), os.getpid(), datetime.now(UTC),
                            ttl=timedelta(seconds=3),
                            process_start=processes.identity(os.getpid()))
        # Node B's recovery, as if it had judged A dead: close A's attempt, start the next.
        token = other.next_fencing_token("slow")
        assert other.transition(first.id, ExecutionStatus.RUNNING, ExecutionStatus.FAILED,
                                error="interrupted", finished_at=datetime.now(UTC))
        [retry] = other.insert_executions([NewExecution(
            job_id="slow", occurrence_id=first.occurrence_id, scheduled_at=first.scheduled_at,
            attempt=2, origin=Origin.MANUAL, node_id="node-b", scope_node=None,
            fencing_token=token, status=ExecutionStatus.RUNNING,
            started_at=datetime.now(UTC))])
        assert _wait(lambda: "fenced:" in caplog.text, 10), caplog.text
        line = next(r.getMessage() for r in caplog.records if "fenced:" in r.getMessage())
        assert f"exec={first.id}" in line and f"exec={retry}" in line, line
        assert "succeeded" in line and "node node-b" in line and "stays failed" in line
        [warning] = [r for r in caplog.records if "fenced:" in r.getMessage()]
        assert warning.levelno == logging.WARNING
        rows = _attempts(other, first)
        assert [(r.id, r.status) for r in rows] == [(first.id, ExecutionStatus.FAILED),
                                                   (retry, ExecutionStatus.RUNNING)]
        # the forged takeover let both attempts run at once: the record says so
        assert rows[0].error.startswith("interrupted; concurrent_after_partition"), rows[0]
        assert "concurrent_after_partition" in caplog.text
    finally:
        other.close()
