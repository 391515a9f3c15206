"""The relay: a burst larger than ``max_concurrent_jobs`` of untracked Python jobs is
started by the workers whose handlers just ended (cronctl.dispatch.relay), and every fire
is still decided by the core: each runs once, in the core's FIFO order, never more at
once than the slots allow, and is counted (fired, lateness, metrics) as it started."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cronctl.config import Config
from cronctl.dispatch import default_dispatcher
from cronctl.dispatch.relay import Relay, Staged
from cronctl.jobs.model import CommandTarget, Isolation, JobDefinition, PythonTarget
from cronctl.runtime import Scheduler
from cronctl.store import open_store

pytestmark = pytest.mark.slow

_lock = threading.Lock()
_running = 0
_most = 0
_seen: list[tuple[str, datetime, float]] = []


def probe(ctx: Any) -> None:
    global _running, _most
    with _lock:
        _running += 1
        _most = max(_most, _running)
    _seen.append((ctx.job_id, ctx.scheduled_at, time.time()))
    time.sleep(0.002)
    with _lock:
        _running -= 1


def _reset() -> None:
    global _running, _most
    _running = _most = 0
    _seen.clear()


def _scheduler(tmp_path: Path, jobs: list[JobDefinition], slots: int
               ) -> tuple[Scheduler, Any]:
    store = open_store("none", node_id="n1")
    config = Config(path=None, base_dir=tmp_path, database="none", jobs_dir=tmp_path,
                    node_id="n1", max_concurrent_jobs=slots,
                    shutdown_timeout=timedelta(seconds=5))
    dispatcher = default_dispatcher(slots)
    sched = Scheduler(config, jobs, store, dispatcher)
    return sched, dispatcher


def _taken(relay: Relay) -> list[Staged]:
    """The staged fires the workers take from ``relay`` from now on, in order."""
    taken: list[Staged] = []
    original = relay.take

    def counting_take() -> Staged | None:
        got = original()
        if got is not None:
            taken.append(got)
        return got

    relay.take = counting_take  # type: ignore[method-assign]
    return taken


def _instant(lead: float = 2.0) -> datetime:
    return datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=lead + 1)


def _cron(at: datetime) -> str:
    return f"{at.second} {at.minute} {at.hour} * * *"


def _wait_seen(n: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while len(_seen) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_burst_runs_each_fire_once_within_the_slots_through_the_relay(
        tmp_path: Path) -> None:
    _reset()
    at = _instant()
    jobs = [JobDefinition(id=f"j{i:03d}", target=PythonTarget(__name__, "probe"),
                          isolation=Isolation.THREAD,
                          cron=_cron(at), max_attempts=1, tracked=False) for i in range(300)]
    sched, dispatcher = _scheduler(tmp_path, jobs, 4)
    taken = _taken(dispatcher.relay)
    sched.start()
    try:
        _wait_seen(300)
        assert sched.wait_idle(15)
        stats = sched.stats()
    finally:
        sched.stop()
    ids = [job for job, _planned, _at in _seen]
    assert sorted(ids) == [j.id for j in jobs]  # each once
    assert _most <= 4
    assert stats["fired"] == 300 and stats["running"] == 0 and stats["waiting"] == 0
    assert len(taken) > 100, "the workers started almost nothing from the relay"
    # Decided ahead of the instant (a crowded one), started no sooner than it.
    assert all(s.not_before == at for s in taken)
    assert min(t for _job, _p, t in _seen) >= at.timestamp()
    # The core's order is the jobs' order (one instant): the workers took them in it.
    order = [s.run[0].request.job.id for s in taken]
    assert order == sorted(order)
    # Lateness is when each handler started, not when the core heard of it.
    lateness = sched.lateness
    assert len(lateness) == 300
    started = {job: t for job, _p, t in _seen}
    worst = max(started.values()) - at.timestamp()
    assert max(lateness) <= worst + 0.05


def test_a_tracked_or_command_waiter_closes_the_relay_and_all_still_run(
        tmp_path: Path) -> None:
    _reset()
    at = _instant()
    marker = tmp_path / "ran"
    jobs: list[JobDefinition] = []
    for i in range(60):
        jobs.append(JobDefinition(id=f"p{i:03d}", target=PythonTarget(__name__, "probe"),
                                  isolation=Isolation.THREAD,
                                  cron=_cron(at), max_attempts=1, tracked=False))
        if i == 30:  # in the middle of the queue: the fires behind it wait for the core
            jobs.append(JobDefinition(
                id="p030x", target=CommandTarget(("touch", str(marker))), cron=_cron(at),
                max_attempts=1, tracked=False))
    sched, _dispatcher = _scheduler(tmp_path, jobs, 3)
    sched.start()
    try:
        _wait_seen(60)
        assert sched.wait_idle(15)
        stats = sched.stats()
    finally:
        sched.stop()
    assert sorted(job for job, _p, _t in _seen) == [f"p{i:03d}" for i in range(60)]
    assert marker.exists()
    assert _most <= 3
    assert stats["fired"] == 61 and stats["waiting"] == 0


def test_a_reload_that_removes_waiting_jobs_while_they_are_staged(tmp_path: Path) -> None:
    """Removed jobs' waiting fires are dropped, whether they were staged or not; a fire a
    worker already started is recorded (it ran)."""
    _reset()
    at = _instant()
    jobs = [JobDefinition(id=f"j{i:03d}", target=PythonTarget(__name__, "sleepy"),
                          isolation=Isolation.THREAD,
                          cron=_cron(at), max_attempts=1, tracked=False) for i in range(40)]
    sched, _dispatcher = _scheduler(tmp_path, jobs, 2)
    sched.start()
    try:
        _wait_seen(3)
        sched.reload(jobs[:5])
        assert sched.wait_idle(15)
        stats = sched.stats()
    finally:
        sched.stop()
    ran = [job for job, _p, _t in _seen]
    assert len(ran) == len(set(ran))  # none twice
    assert set(ran) >= {f"j{i:03d}" for i in range(5)}
    assert len(ran) < 40  # the removed jobs' waiting fires did not all run
    assert stats["running"] == 0 and stats["waiting"] == 0


def test_a_stop_just_before_a_crowded_instant_starts_none_of_its_fires(
        tmp_path: Path) -> None:
    _reset()
    at = _instant()
    jobs = [JobDefinition(id=f"j{i:03d}", target=PythonTarget(__name__, "probe"),
                          isolation=Isolation.THREAD,
                          cron=_cron(at), max_attempts=1, tracked=False) for i in range(50)]
    sched, dispatcher = _scheduler(tmp_path, jobs, 3)
    sched.start()
    try:
        while datetime.now(UTC) < at - timedelta(seconds=0.1):
            time.sleep(0.01)
        assert len(dispatcher.relay) > 0 or sched.firing.held  # decided ahead
    finally:
        sched.stop()
    time.sleep(max(at.timestamp() - time.time(), 0) + 0.2)
    assert _seen == []
    assert sched.stats()["fired"] == 0


def sleepy(ctx: Any) -> None:
    _seen.append((ctx.job_id, ctx.scheduled_at, time.time()))
    time.sleep(0.05)


def test_relay_take_claim_revoke() -> None:
    relay = Relay()
    now = [100.0]
    relay.mono = lambda: now[0]
    a, b, c = Staged("a", 200.0), Staged("b", 200.0), Staged("c", 150.0)
    relay.push([a, b, c])
    assert not relay.drained.is_set()
    assert relay.take() is a and a.started is not None
    assert relay.claim(a) is False  # started: the runtime adopts it
    assert relay.claim(b) is True and b.revoked and len(relay) == 1
    now[0] = 160.0  # c is too old to take: the core decides it
    assert relay.take() is None and c.revoked and c.started is None
    assert relay.drained.is_set()
    d = Staged("d", 500.0)
    relay.push([d])
    assert relay.revoke() == [d] and d.revoked and relay.take() is None


_ids: list[int | None] = []


def tracked_probe(ctx: Any) -> None:
    _ids.append(ctx.execution_id)
    _seen.append((ctx.job_id, ctx.scheduled_at, time.time()))


def test_tracked_waiters_are_relayed_once_their_rows_are_written(tmp_path: Path) -> None:
    """A tracked fire waiting for a slot is staged with its place in the queue and taken
    only once its pending row is written: it runs with that row's id, the row ends
    succeeded with its start time, and no row is left pending."""
    from cronctl.jobs.model import ExecutionStatus

    _reset()
    _ids.clear()
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = open_store(url, node_id="n1")
    at = _instant()
    jobs = [JobDefinition(id=f"t{i:03d}", target=PythonTarget(__name__, "tracked_probe"),
                          isolation=Isolation.THREAD,
                          cron=_cron(at), max_attempts=1) for i in range(120)]
    config = Config(path=None, base_dir=tmp_path, database=url, jobs_dir=tmp_path,
                    node_id="n1", tracked=True, max_concurrent_jobs=3,
                    shutdown_timeout=timedelta(seconds=5))
    dispatcher = default_dispatcher(3)
    taken = _taken(dispatcher.relay)
    sched = Scheduler(config, jobs, store, dispatcher)
    sched.start()
    try:
        _wait_seen(120)
        assert sched.wait_idle(15)
    finally:
        sched.stop()
    rows = store.list_executions(limit=None)
    store.close()
    assert len(taken) > 30, "the workers started almost no tracked waiter"
    assert all(s.run[0].request.execution_id is not None for s in taken)
    assert sorted(j for j, _p, _t in _seen) == [j.id for j in jobs]
    assert len(rows) == 120 and {r.status for r in rows} == {ExecutionStatus.SUCCEEDED}
    assert sorted(i for i in _ids if i is not None) == sorted(r.id for r in rows)
    assert all(r.started_at is not None and r.started_at >= r.scheduled_at for r in rows)
