"""Retention (SPEC section 7): how big the database gets, how fast a prune is, and what a
prune pass does to lateness. On SQLite and PostgreSQL (``$CRONCTL_TEST_POSTGRES_URL`` or
the local default; a scratch database is created and dropped).

- size: 1,000 jobs every minute for 30 days is 43.2 M executions: too many for a
  benchmark, so a scaled run is measured and extrapolated. ``JOBS_SIZE`` jobs every
  minute for one day, each execution with two short log lines ("hello from ... attempt
  1", the size a quiet job writes), through the store's own batch paths; its bytes per
  execution (rows, log lines and every index) times 43.2 M is the size after 30 days
  with the default retention (30 days: nothing is old enough to go yet, so this is also
  the size at which the file stops growing). Then the steady state itself, scaled in
  time: ``JOBS_STEADY`` jobs, ``executions = "1d"``, four simulated days with a prune
  every simulated hour as ``cronctl run`` does; the size at the end of each day.
  PostgreSQL sizes are ``pg_total_relation_size`` after a ``VACUUM``, which stands for
  autovacuum (off on some test servers).
- vacuum (SQLite): a file without incremental vacuum (as earlier versions created them)
  against one with it: 10 days of ``JOBS_STEADY`` jobs, one prune to 5 days, then five
  more days with hourly prunes; the file size after each.
- throughput: ``THROUGHPUT_ROWS`` old executions with two lines each, pruned in the
  batches ``cronctl run`` uses: rows (executions + log lines) deleted per second, and
  how long one step takes (one transaction: on SQLite, the longest a fire of the pruning
  process may wait for the write lock).
- lateness: a real :class:`~cronctl.runtime.Scheduler` with ``JOBS_LATE`` tracked
  per-second jobs; start minus planned of their executions (from the database) during
  ``WINDOW`` seconds without a prune, then during a prune pass of ``LATE_BACKLOG`` old
  executions (2 lines each) started on the scheduler's I/O thread as ``run`` does.

``python -m bench bench_retention`` runs all; ``python -m bench.bench_retention size
lateness`` only the scenarios named. Several minutes in all.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id, open_store
from cronctl.store.base import NewExecution, PrunePolicy, PruneProgress

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
TARGET_EXECUTIONS = 1_000 * 60 * 24 * 30  # 1,000 jobs every minute for 30 days
JOBS_SIZE = 100
JOBS_STEADY = 20
THROUGHPUT_ROWS = 100_000
JOBS_LATE = 50
LATE_BACKLOG = 100_000
WINDOW = 10.0
CHUNK = 5_000


def noop() -> None:
    """The per-second jobs' handler (``python:bench.bench_retention:noop``)."""


# --- seeding -----------------------------------------------------------------------------


def seed_minutes(store: Store, jobs: list[str], start: datetime, minutes: int,
                 lines: int = 2) -> int:
    """Every job once a minute for ``minutes`` from ``start``, finished, with ``lines``
    log lines each, through insert_executions and append_logs. Returns rows written."""
    written = 0
    for first in range(0, minutes, max(1, CHUNK // len(jobs))):
        rows: list[NewExecution] = []
        for m in range(first, min(minutes, first + max(1, CHUNK // len(jobs)))):
            at = start + timedelta(minutes=m)
            for job in jobs:
                rows.append(NewExecution(
                    job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at,
                    attempt=1, origin=Origin.CRON, node_id="bench", scope_node=None,
                    target="python:jobs:work", status=ExecutionStatus.SUCCEEDED,
                    started_at=at + timedelta(milliseconds=5), created_at=at,
                    finished_at=at + timedelta(seconds=1)))
        ids = [i for i in store.insert_executions(rows) if i is not None]
        store.append_logs([(eid, row.scheduled_at, "INFO", f"hello from {row.job_id} attempt 1")
                           for eid, row in zip(ids, rows, strict=True) for _ in range(lines)])
        written += len(ids) * (1 + lines)
    return written


def policy(now: datetime, executions: timedelta) -> PrunePolicy:
    return PrunePolicy(executions_before=now - executions, keep_last=20,
                       skipped_before=now - timedelta(days=7),
                       triggers_before=now - executions)


# --- backends ----------------------------------------------------------------------------


@contextmanager
def sqlite() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        yield f"sqlite:///{Path(tmp) / 'bench.db'}"


@contextmanager
def postgres(server: str) -> Iterator[str]:
    import psycopg

    admin = server.replace("postgresql+psycopg://", "postgresql://", 1)
    name = f"cronctl_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server.rpartition('/')[0]}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg(url: str) -> Any:
    import psycopg

    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://", 1),
                           autocommit=True)


def vacuum(url: str) -> None:
    """PostgreSQL: what autovacuum does (it is off on some test servers)."""
    if not url.startswith("sqlite"):
        with _pg(url) as conn:
            conn.execute("VACUUM")


def size_of(store: Store, url: str) -> int:
    """Bytes the database takes: the SQLite file (after a WAL checkpoint), or the
    PostgreSQL tables with their indexes after a VACUUM."""
    if url.startswith("sqlite"):
        engine: Any = getattr(store, "engine")  # noqa: B009 - the SQL store's engine
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        path = url.removeprefix("sqlite:///")
        return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
    vacuum(url)
    with _pg(url) as conn:
        return int(conn.execute(
            "SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"
        ).fetchone()[0])


# --- scenarios ---------------------------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def scenario_size(url: str) -> dict[str, Any]:
    store = open_store(url, node_id="bench")
    try:
        empty = size_of(store, url)
        jobs = [f"job-{i:04d}" for i in range(JOBS_SIZE)]
        started = time.perf_counter()
        seed_minutes(store, jobs, T0, 24 * 60)
        seeded = time.perf_counter() - started
        executions = JOBS_SIZE * 24 * 60
        per = (size_of(store, url) - empty) / executions
    finally:
        store.close()
    return {"executions": executions, "bytes_per_execution": per,
            "extrapolated_gb": per * TARGET_EXECUTIONS / 1e9,
            "seed_rows_per_s": executions * 3 / seeded}


def scenario_steady(url: str) -> dict[str, Any]:
    from cronctl.runtime.pruning import VACUUM_PAGES, VACUUM_SLACK

    store = open_store(url, node_id="bench")
    sizes: list[float] = []
    try:
        jobs = [f"job-{i:04d}" for i in range(JOBS_STEADY)]
        for hour in range(4 * 24):
            seed_minutes(store, jobs, T0 + timedelta(hours=hour), 60)
            store.prune(policy(T0 + timedelta(hours=hour + 1), timedelta(days=1)))
            vacuum(url)
            while store.reclaim_space(max_pages=VACUUM_PAGES,
                                      keep_fraction=VACUUM_SLACK) >= VACUUM_PAGES:
                pass
            if hour % 24 == 23:
                sizes.append(size_of(store, url) / 1e6)
    finally:
        store.close()
    return {"mb_per_day": sizes}


def scenario_vacuum(url: str) -> dict[str, Any]:
    """SQLite only: ``auto_vacuum`` NONE (files of earlier versions) against INCREMENTAL
    (new files): ``JOBS_STEADY`` jobs every minute, 10 days seeded, then one prune to
    ``executions = "5d"`` (a long history meeting retention), then 5 more days with a
    prune every hour. Sizes in MB, and the time reclaim_space took in all."""
    import sqlite3

    from cronctl.runtime.pruning import VACUUM_PAGES, VACUUM_SLACK

    if not url.startswith("sqlite"):
        return {}
    out: dict[str, Any] = {}
    path = url.removeprefix("sqlite:///")
    jobs = [f"job-{i:04d}" for i in range(JOBS_STEADY)]
    for mode in ("none", "incremental"):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        if mode == "none":  # what a file created before this version has
            with sqlite3.connect(path) as conn:
                conn.execute("PRAGMA auto_vacuum = NONE")
                conn.execute("CREATE TABLE placeholder (x)")
        store = open_store(url, node_id="bench")
        reclaim = 0.0

        def prune(now: datetime, store: Store = store) -> None:
            nonlocal reclaim
            store.prune(policy(now, timedelta(days=5)))
            started = time.perf_counter()
            while store.reclaim_space(max_pages=VACUUM_PAGES,
                                      keep_fraction=VACUUM_SLACK) >= VACUUM_PAGES:
                pass
            reclaim += time.perf_counter() - started

        try:
            seed_minutes(store, jobs, T0, 10 * 24 * 60)
            seeded = size_of(store, url) / 1e6
            prune(T0 + timedelta(days=10))
            once = size_of(store, url) / 1e6
            for hour in range(5 * 24):
                start = T0 + timedelta(days=10, hours=hour)
                seed_minutes(store, jobs, start, 60)
                prune(start + timedelta(hours=1))
            later = size_of(store, url) / 1e6
        finally:
            store.close()
        out[mode] = {"seeded_mb": seeded, "after_one_prune_mb": once, "steady_mb": later,
                     "reclaim_s": reclaim}
    return out


def scenario_throughput(url: str) -> dict[str, Any]:
    from cronctl.runtime.pruning import batch_for

    store = open_store(url, node_id="bench")
    try:
        jobs = [f"job-{i:04d}" for i in range(100)]
        minutes = THROUGHPUT_ROWS // len(jobs)
        seed_minutes(store, jobs, T0, minutes)
        now = T0 + timedelta(days=60)
        p = policy(now, timedelta(days=30))
        batch = batch_for(store)
        at: PruneProgress | None = PruneProgress()
        rows, steps = 0, []
        started = time.perf_counter()
        while at is not None:
            t = time.perf_counter()
            step = store.prune_step(p, at, batch=batch)
            steps.append(time.perf_counter() - t)
            rows, at = rows + step.counts.total, step.next
        elapsed = time.perf_counter() - started
    finally:
        store.close()
    qs = statistics.quantiles(steps, n=100, method="inclusive")
    return {"rows": rows, "rows_per_s": rows / elapsed, "steps": len(steps), "batch": batch,
            "step_p50_ms": qs[49] * 1000, "step_p99_ms": qs[98] * 1000,
            "step_max_ms": max(steps) * 1000}


def _percentiles(samples: list[float]) -> dict[str, float]:
    if len(samples) < 2:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"),
                "samples": len(samples)}
    qs = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": qs[49] * 1000, "p99_ms": qs[98] * 1000, "max_ms": max(samples) * 1000,
            "samples": len(samples)}


def _lateness(store: Store, jobs: list[str], since: datetime, until: datetime) -> list[float]:
    out: list[float] = []
    for job in jobs:
        for r in store.list_executions(job_id=job, since=since, until=until, limit=None):
            if r.started_at is not None:
                out.append((r.started_at - r.scheduled_at).total_seconds())
    return out


def scenario_lateness(url: str) -> dict[str, Any]:
    from cronctl.config import Config, RetentionSettings
    from cronctl.dispatch import default_dispatcher
    from cronctl.dispatch.interceptors import Interceptors
    from cronctl.jobs.model import Isolation, JobDefinition, PythonTarget
    from cronctl.runtime import Scheduler

    store = open_store(url, node_id="bench")
    seed_minutes(store, [f"old-{i:03d}" for i in range(100)], T0, LATE_BACKLOG // 100)
    names = [f"tick-{i:03d}" for i in range(JOBS_LATE)]
    jobs = [JobDefinition(id=name, target=PythonTarget("bench.bench_retention", "noop"),
                          isolation=Isolation.THREAD,
                          every=timedelta(seconds=1), tracked=True, max_attempts=1)
            for name in names]
    config = Config(path=None, base_dir=Path.cwd(), database=url, jobs_dir=Path.cwd(),
                    node_id=f"bench-{uuid.uuid4().hex[:6]}",
                    progress_flush_interval=timedelta(seconds=1),
                    retention=RetentionSettings(interval=timedelta(0)))  # passes by hand
    scheduler = Scheduler(config, jobs, store,
                          default_dispatcher(10, interceptors=Interceptors(())))
    scheduler.start()
    try:
        time.sleep(2.0)
        quiet_from = datetime.now(UTC)
        time.sleep(WINDOW)
        quiet_to = busy_from = datetime.now(UTC)
        began = time.perf_counter()
        scheduler.io.submit(scheduler.pruner.start_pass)
        while scheduler.pruner.passes == 0 and time.perf_counter() - began < 300:
            time.sleep(0.05)
        busy_to = datetime.now(UTC)
        pass_s = time.perf_counter() - began
        time.sleep(1.5)  # the last fires of the window end and are written
    finally:
        scheduler.stop(timeout=10)
    try:
        quiet = _percentiles(_lateness(store, names, quiet_from, quiet_to))
        busy = _percentiles(_lateness(store, names, busy_from, busy_to))
    finally:
        store.close()
    return {"quiet": quiet, "pruning": busy, "pass_s": pass_s}


SCENARIOS: dict[str, Callable[[str], dict[str, Any]]] = {
    "size": scenario_size, "steady": scenario_steady, "vacuum": scenario_vacuum,
    "throughput": scenario_throughput, "lateness": scenario_lateness,
}


def _postgres_reason(server: str) -> str | None:
    try:
        import psycopg

        admin = server.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(admin, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure means: skip, and say why
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def _show(name: str, backend: str, r: dict[str, Any]) -> None:
    if name == "size":
        print(f"  size       {backend:10} {r['bytes_per_execution']:7.0f} B per execution "
              f"(2 log lines, indexes) -> 1,000 jobs/min for 30 days ({TARGET_EXECUTIONS:,} "
              f"executions): {r['extrapolated_gb']:.1f} GB  (measured on {r['executions']:,}; "
              f"seeded at {r['seed_rows_per_s']:,.0f} rows/s)", flush=True)
    elif name == "steady":
        days = ", ".join(f"{mb:.1f}" for mb in r["mb_per_day"])
        print(f"  steady     {backend:10} MB at the end of days 1-4, executions = 1d, "
              f"{JOBS_STEADY} jobs/min, hourly prune: {days}", flush=True)
    elif name == "vacuum":
        for mode, v in r.items():
            print(f"  vacuum     {backend:10} auto_vacuum {mode:11}: 10 days {v['seeded_mb']:.1f} "
                  f"MB, after pruning to 5 days {v['after_one_prune_mb']:.1f} MB, 5 days "
                  f"later (hourly prunes) {v['steady_mb']:.1f} MB; reclaim "
                  f"{v['reclaim_s']:.2f} s in all", flush=True)
    elif name == "throughput":
        print(f"  throughput {backend:10} {r['rows_per_s']:9,.0f} rows/s ({r['rows']:,} rows "
              f"in {r['steps']} steps of <= {r['batch']}; one step p50 "
              f"{r['step_p50_ms']:.0f} / p99 {r['step_p99_ms']:.0f} / max "
              f"{r['step_max_ms']:.0f} ms)", flush=True)
    else:
        q, b = r["quiet"], r["pruning"]
        print(f"  lateness   {backend:10} {JOBS_LATE} tracked per-second jobs: without a prune "
              f"p50 {q['p50_ms']:.1f} / p99 {q['p99_ms']:.1f} / max {q['max_ms']:.1f} ms "
              f"({q['samples']}); during a {r['pass_s']:.1f} s pass p50 {b['p50_ms']:.1f} / "
              f"p99 {b['p99_ms']:.1f} / max {b['max_ms']:.1f} ms ({b['samples']})", flush=True)


def main(words: list[str] | None = None) -> None:
    if words is None:
        words = [a for a in sys.argv[1:] if not a.startswith("bench_")]
    names = [n for n in SCENARIOS if not words or any(w in n for w in words)]
    server = os.environ.get("CRONCTL_TEST_POSTGRES_URL") or DEFAULT_PG
    backends: list[tuple[str, Callable[[], AbstractContextManager[str]]]] = [
        ("sqlite", sqlite)]
    reason = _postgres_reason(server)
    if reason is None:
        backends.append(("postgresql", lambda: postgres(server)))
    print("retention: database size, prune throughput, lateness with and without a prune")
    for name in names:
        for backend, opener in backends:
            with opener() as url:
                _show(name, backend, SCENARIOS[name](url))
    if reason is not None:
        print(f"  postgresql skipped: {reason}")


if __name__ == "__main__":
    main()
