"""Pruning inside ``cronctl run`` (SPEC section 7).

The :class:`Pruner` against a real SQLite file, its steps run by hand (no sleeping): one
pass at a time cluster-wide, one INFO line per pass, outages and errors. Then a real
``cronctl run`` with per-second jobs that prunes a seeded database while the jobs keep
firing on time."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl.config import RetentionSettings
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.runtime.io import IoWorker
from cronctl.runtime.pruning import Pruner, policy_for
from cronctl.store import Store, occurrence_id, open_store
from cronctl.store.base import NewExecution, PruneCounts, StoreUnavailable
from cronctl.store.writerecords import PRUNE_LOCK

NOW = datetime(2026, 6, 1, tzinfo=UTC)
DAY = timedelta(days=1)
SETTINGS = RetentionSettings(executions=30 * DAY, keep_last=2, skipped=7 * DAY)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    yield s
    s.close()


def seed(store: Store, job: str, ends: list[datetime], lines: int = 1) -> list[int]:
    rows = [NewExecution(job_id=job, occurrence_id=occurrence_id(job, end), scheduled_at=end,
                         attempt=1, origin=Origin.CRON, node_id="n1", scope_node=None,
                         status=ExecutionStatus.SUCCEEDED, started_at=end, created_at=end,
                         finished_at=end) for end in ends]
    ids = [i for i in store.insert_executions(rows) if i is not None]
    store.append_logs([(eid, NOW, "INFO", "x") for eid in ids for _ in range(lines)])
    return ids


class Steps:
    """``later`` for the pruner: keeps the tasks, runs them when told."""

    def __init__(self) -> None:
        self.tasks: list[tuple[float, Callable[[], object]]] = []

    def __call__(self, delay: float, task: Callable[[], object]) -> None:
        self.tasks.append((delay, task))

    def run_all(self, limit: int = 1000) -> int:
        ran = 0
        while self.tasks:
            _, task = self.tasks.pop(0)
            task()
            ran += 1
            assert ran < limit
        return ran


def pruner(store: Store, steps: Steps, *, node: str = "n1", down: list[bool] | None = None,
           batch: int = 10) -> Pruner:
    flag = down if down is not None else [False]
    return Pruner(store, SETTINGS, node_id=node, clock=lambda: NOW, later=steps,
                  is_down=lambda: flag[0], batch=batch)


def test_a_pass_in_small_steps_with_one_info_line(store: Store,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    old = seed(store, "a", [NOW - (40 + n) * DAY for n in range(30)], lines=2)
    seed(store, "b", [NOW - DAY])
    steps = Steps()
    p = pruner(store, steps)
    with caplog.at_level(logging.DEBUG, logger="cronctl.runtime"):
        p.start_pass()
        assert p.running and store.guard_locks()[0].key == PRUNE_LOCK
        assert all(delay >= 0.02 for delay, _ in steps.tasks)
        assert steps.run_all() > 8  # 28 executions and 56 lines, 10 rows a step
    assert not p.running and p.passes == 1
    assert store.guard_locks() == []
    assert {r.id for r in store.list_executions(job_id="a", limit=None)} == set(old[:2])
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(info) == 1, info
    assert re.match(r"pruned executions=28 log_lines=56 skipped=0 trigger_requests=0 in ",
                    info[0])
    p.start_pass()  # the next pass finds nothing
    steps.run_all()
    assert p.passes == 2
    assert store.prune(policy_for(SETTINGS, NOW)) == PruneCounts()


def test_one_node_at_a_time(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    seed(store, "a", [NOW - (40 + n) * DAY for n in range(5)])
    steps = Steps()
    first, second = pruner(store, steps, node="n1"), pruner(store, steps, node="n2")
    first.start_pass()
    with caplog.at_level(logging.DEBUG, logger="cronctl.runtime"):
        second.start_pass()
    assert not second.running
    assert any("another node is pruning" in r.getMessage() for r in caplog.records)
    steps.run_all()
    assert first.passes == 1 and second.passes == 0
    second.start_pass()  # free again
    steps.run_all()
    assert second.passes == 1


def test_an_outage_abandons_the_pass_and_keeps_the_lock(store: Store) -> None:
    seed(store, "a", [NOW - (40 + n) * DAY for n in range(30)])
    steps = Steps()
    down = [False]
    p = pruner(store, steps, down=down)
    p.start_pass()
    down[0] = True
    steps.run_all()
    assert not p.running and p.passes == 0
    assert [g.node_id for g in store.guard_locks()] == ["n1"]
    p.start_pass()  # still down: nothing
    assert not p.running
    down[0] = False
    p.start_pass()  # the lock is still ours: the next pass goes on
    steps.run_all()
    assert p.passes == 1 and store.guard_locks() == []
    assert len(store.list_executions(job_id="a", limit=None)) == 2


class Failing:
    """A real store whose prune steps fail after ``ok`` of them."""

    def __init__(self, inner: Store, ok: int, error: Exception) -> None:
        self.inner, self.ok, self.error = inner, ok, error

    def prune_step(self, *args: object, **kwargs: object) -> object:
        if self.ok <= 0:
            raise self.error
        self.ok -= 1
        return self.inner.prune_step(*args, **kwargs)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_errors_end_the_pass(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    seed(store, "a", [NOW - (40 + n) * DAY for n in range(30)])
    steps = Steps()
    p = pruner(Failing(store, 1, RuntimeError("disk on fire")), steps)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="cronctl.runtime"):
        p.start_pass()
        steps.run_all()
    assert not p.running and store.guard_locks() == []
    assert any("prune pass stopped (disk on fire) after executions=" in r.getMessage()
               for r in caplog.records)
    unavailable = pruner(Failing(store, 0, StoreUnavailable("gone")), steps)  # type: ignore[arg-type]
    with pytest.raises(StoreUnavailable):
        unavailable.start_pass()  # the I/O thread hands it to the store's health
    assert not unavailable.running


def test_attach_only_when_persistent_and_an_interval(store: Store) -> None:
    def periodic(io: IoWorker) -> list[str]:
        return [p.name for p in io._periodic]

    io = IoWorker()
    Pruner.attach(io, store, SETTINGS, node_id="n1", clock=lambda: NOW, is_down=lambda: False)
    assert periodic(io) == ["prune"]
    assert io._periodic[0].due - time.monotonic() <= 60.0  # the first pass within a minute
    io = IoWorker()
    Pruner.attach(io, store, RetentionSettings(interval=timedelta(0)), node_id="n1",
                  clock=lambda: NOW, is_down=lambda: False)
    assert periodic(io) == []
    memory = open_store("none", node_id="n1")
    try:
        io = IoWorker()
        Pruner.attach(io, memory, SETTINGS, node_id="n1", clock=lambda: NOW,
                      is_down=lambda: False)
        assert periodic(io) == []
    finally:
        memory.close()


# --- a real cronctl run -------------------------------------------------------------------

JOBS = "".join(f'''
[jobs.tick{k}]
every = "1s"
target = "python:cronctl_test_handlers:work"
''' for k in range(4))

OLD_PER_JOB = 12_000


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.mark.slow
def test_run_prunes_while_per_second_jobs_fire_on_time(tmp_path: Path, database: str) -> None:
    project = Project(tmp_path, database, extra='''
[retention]
executions = "2d"
keep_last = 5
interval = "2s"
''')
    project.jobs(JOBS)
    # 60 days of history for the four jobs and one job that is gone, one line each.
    store = open_sqlite(project)
    start = datetime.now(UTC)
    try:
        for job in [f"tick{k}" for k in range(4)] + ["gone"]:
            step = 60 * DAY / OLD_PER_JOB
            seed(store, job, [start - 3 * DAY - n * step for n in range(OLD_PER_JOB)])
    finally:
        store.close()
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t, 20), run.text()
        began = datetime.now(UTC)
        assert run.wait_for(lambda t: re.search(r"pruned executions=[1-9]", t) is not None,
                            60), run.text()
        assert run.wait_for(lambda t: "pruned executions=0 " in t, 30), run.text()
        ended = datetime.now(UTC)
    finally:
        code = run.stop()
    text = run.text()
    assert code == 0, text
    passes = [(int(e), int(n)) for e, n in
              re.findall(r"pruned executions=(\d+) log_lines=(\d+) skipped=0", text)]
    # Every old row but the newest 5 of the gone job; the jobs' own new rows count among
    # their newest, so the first pass may leave a few old ones for the next.
    assert sum(e for e, _ in passes) == 5 * OLD_PER_JOB - 5, passes
    assert sum(n for _, n in passes) == 5 * OLD_PER_JOB - 5, passes
    store = open_sqlite(project)
    try:
        for k in range(4):
            rows = store.list_executions(job_id=f"tick{k}", limit=None)
            old = [r for r in rows if r.scheduled_at < start]
            assert len(old) == 0  # the run's own executions are the newest
            fired = sorted(r.scheduled_at for r in rows if began <= r.scheduled_at <= ended)
            assert len(fired) >= (ended - began).total_seconds() - 2
            assert all(b - a == timedelta(seconds=1) for a, b in zip(fired, fired[1:],
                                                                     strict=False))
            late = [(r.started_at - r.scheduled_at).total_seconds() for r in rows
                    if r.started_at is not None]
            assert max(late) < 1.0, max(late)
        assert len(store.list_executions(job_id="gone", limit=None)) == 5
    finally:
        store.close()
