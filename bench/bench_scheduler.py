"""The scheduler under load, side by side with APScheduler 3, in one run.

Every scenario runs in a fresh child interpreter, so the numbers of one (threads, memory,
CPU) do not leak into the next. Scenarios, all with 10,000 registered jobs:

- throughput: untracked no-op Python handler, every job every second (10,000 fires/s
  asked for); fires per second actually run. APScheduler 3: BackgroundScheduler,
  ThreadPoolExecutor(10); cronctl: ``max_concurrent_jobs = 10``.
- lateness: every job every 10 s, the jobs spread 1 ms apart (~1,000 fires/s); start
  minus planned, measured inside the handler (``now - ctx.scheduled_at`` for cronctl).
- tracked: like throughput, but every fire writes its execution rows, on SQLite and on
  PostgreSQL (``$CRONCTL_TEST_POSTGRES_URL``, a fresh database created and dropped here).
- idle: 10,000 daily jobs on SQLite: time to READY, CPU while idle, resident memory.

``python -m bench bench_scheduler`` or ``make bench``; about two minutes.
``python -m bench.bench_scheduler tracked idle`` runs only the scenarios whose names
contain one of the words (their APScheduler counterparts included when they exist), and
prints the rows it has numbers for.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._support import (
    NoPostgres,
    brief,
    fmt,
    percentiles,
    postgres_database,
    print_table,
    rss_mb,
)

JOBS = 10_000
WARMUP = 1.5
WINDOW = 4.0
IDLE_WINDOW = 4.0
CHILD_TIMEOUT = 90.0

# --- handlers (imported by name from ``python:`` targets) ------------------------------

_lock = threading.Lock()
_count = 0
_lateness: list[float] = []


def noop() -> None:
    global _count
    with _lock:
        _count += 1


_stamps: list[tuple[float, float]] = []  # (planned, ran) per fire


def stamp_ctx(ctx: Any) -> None:
    _stamps.append((ctx.scheduled_at.timestamp(), time.time()))


def stamp() -> None:
    now = time.time()
    _stamps.append((float(int(now)), now))  # bursts on whole seconds, drained within 1 s


def late_ctx(ctx: Any) -> None:
    _lateness.append(time.time() - ctx.scheduled_at.timestamp())


def _fires() -> int:
    with _lock:
        return _count


# --- measuring -----------------------------------------------------------------------


def _rss_mb() -> tuple[float, float]:
    return rss_mb()


def _rate(window: float = WINDOW) -> float:
    time.sleep(WARMUP)
    c0, t0 = _fires(), time.perf_counter()
    time.sleep(window)
    c1, t1 = _fires(), time.perf_counter()
    return (c1 - c0) / (t1 - t0)


def _burst_rate() -> dict[str, float]:
    """All jobs fire on each whole second: how fast is each burst drained? For every
    complete burst in the window, fires / (last start - planned instant); the median."""
    time.sleep(WARMUP)
    _stamps.clear()
    t0 = time.time()
    time.sleep(WINDOW)
    t1 = time.time()
    stamps = list(_stamps)
    bursts: dict[float, list[float]] = {}
    for planned, ran in stamps:
        bursts.setdefault(planned, []).append(ran)
    complete = {planned: runs for planned, runs in bursts.items()
                if t0 + 0.5 < planned < t1 - 1.5}
    rates = [len(runs) / max(max(runs) - planned, 1e-6) for planned, runs in complete.items()]
    drain = [max(runs) - planned for planned, runs in complete.items()]
    # One burst per second: the mean burst size is the sustained rate (10,000 = kept up).
    sustained = statistics.mean(len(runs) for runs in complete.values()) if complete else 0.0
    return {"burst_fires_per_s": statistics.median(rates) if rates else float("nan"),
            "burst_drain_s": statistics.median(drain) if drain else float("nan"),
            "fires_per_s": sustained, "bursts": len(rates)}


def _percentiles(samples: list[float]) -> dict[str, float]:
    return percentiles(samples)


# --- cronctl -------------------------------------------------------------------------


def _cronctl(database: str, jobs: list[Any], tracked: bool) -> tuple[Any, Any, float]:
    """Open the store, build and start the scheduler; returns (scheduler, store, seconds
    to READY)."""
    from cronctl.config import Config
    from cronctl.dispatch import default_dispatcher
    from cronctl.dispatch.interceptors import Interceptors
    from cronctl.runtime import Scheduler
    from cronctl.store import open_store

    started = time.perf_counter()
    config = Config(path=None, base_dir=Path.cwd(), database=database, jobs_dir=Path.cwd(),
                    node_id=f"bench-{uuid.uuid4().hex[:6]}", tracked=tracked,
                    max_concurrent_jobs=10, progress_flush_interval=timedelta(seconds=1))
    store = open_store(database, node_id=config.node_id)
    dispatcher = default_dispatcher(config.max_concurrent_jobs, interceptors=Interceptors(()))
    scheduler = Scheduler(config, jobs, store, dispatcher)
    scheduler.start()
    return scheduler, store, time.perf_counter() - started


def _job(i: int, handler: str, tracked: bool, *, every: float | None = None,
         cron: str | None = None, anchor_ms: int = 0) -> Any:
    from cronctl.jobs.model import EPOCH, Isolation, JobDefinition, PythonTarget

    return JobDefinition(
        id=f"job-{i:05d}",
        target=PythonTarget("bench.bench_scheduler", handler),
        isolation=Isolation.THREAD,
        cron=cron,
        every=None if every is None else timedelta(seconds=every),
        anchor=EPOCH + timedelta(milliseconds=anchor_ms),
        tracked=tracked,
        max_attempts=1,
    )


def cronctl_throughput() -> dict[str, Any]:
    jobs = [_job(i, "stamp_ctx", False, every=1) for i in range(JOBS)]
    scheduler, store, ready = _cronctl("none", jobs, False)
    try:
        result = _burst_rate()
        rss, peak = _rss_mb()
    finally:
        scheduler.stop(timeout=10)
        store.close()
    return {**result, "ready_s": ready, "rss_mb": rss, "peak_rss_mb": peak}


def _stop(scheduler: Any, store: Any, limit: float = 15.0) -> float | None:
    """Stop in a helper thread; seconds it took, or None if still busy after ``limit``
    (then the child exits anyway: the numbers are already taken)."""
    def run() -> None:
        scheduler.stop(timeout=10)
        store.close()

    started = time.perf_counter()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    return None if thread.is_alive() else time.perf_counter() - started


def cronctl_tracked(database: str) -> dict[str, Any]:
    jobs = [_job(i, "noop", True, every=1) for i in range(JOBS)]
    scheduler, store, ready = _cronctl(database, jobs, True)
    try:
        rate = _rate()
        rss, peak = _rss_mb()
    finally:
        stopped = _stop(scheduler, store)
    return {"fires_per_s": rate, "ready_s": ready, "rss_mb": rss, "peak_rss_mb": peak,
            "stop_s": stopped if stopped is not None else "still stopping after 15 s"}


def cronctl_tracked_sqlite() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        return cronctl_tracked(f"sqlite:///{tmp}/bench.db")


def cronctl_tracked_postgres() -> dict[str, Any]:
    try:
        with postgres_database() as url:
            return cronctl_tracked(url)
    except NoPostgres as exc:
        return {"skipped": str(exc)}


def cronctl_lateness() -> dict[str, Any]:
    jobs = [_job(i, "late_ctx", False, every=10, anchor_ms=i) for i in range(JOBS)]
    scheduler, store, _ = _cronctl("none", jobs, False)
    try:
        time.sleep(WARMUP)
        _lateness.clear()
        t0 = time.perf_counter()
        time.sleep(WINDOW + 1)
        samples, elapsed = list(_lateness), time.perf_counter() - t0
    finally:
        scheduler.stop(timeout=10)
        store.close()
    return {**_percentiles(samples), "fires_per_s": len(samples) / elapsed}


def cronctl_idle() -> dict[str, Any]:
    # Daily jobs, none of which fires during the measurement (12 h away from now).
    now = datetime.now(UTC)
    jobs = [_job(i, "noop", True, cron=f"{i % 60} {i // 60 % 60} {_hour(now, i)} * * *")
            for i in range(JOBS)]
    with tempfile.TemporaryDirectory() as tmp:
        scheduler, store, ready = _cronctl(f"sqlite:///{tmp}/bench.db", jobs, True)
        try:
            time.sleep(1.0)  # let start-up work (definition snapshot, first polls) settle
            fired_before = _fires()
            cpu0, t0 = time.process_time(), time.perf_counter()
            time.sleep(IDLE_WINDOW)
            cpu1, t1 = time.process_time(), time.perf_counter()
            rss, peak = _rss_mb()
            fired = _fires() - fired_before
        finally:
            scheduler.stop(timeout=10)
            store.close()
    return {"ready_s": ready, "idle_cpu_pct": (cpu1 - cpu0) / (t1 - t0) * 100,
            "rss_mb": rss, "peak_rss_mb": peak, "fired_while_idle": fired}


def _hour(now: datetime, i: int) -> int:
    return (now.hour + 12 + i // 3600) % 24


# --- APScheduler 3 -------------------------------------------------------------------


def _apscheduler(add: Callable[[Any], None]) -> tuple[Any, float]:
    import logging

    from apscheduler.executors.pool import ThreadPoolExecutor  # type: ignore[import-untyped]
    from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

    logging.getLogger("apscheduler").setLevel(logging.CRITICAL)
    started = time.perf_counter()
    scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(10)},
                                    timezone=UTC)
    add(scheduler)
    scheduler.start()
    return scheduler, time.perf_counter() - started


def aps_throughput() -> dict[str, Any]:
    from apscheduler.triggers.interval import IntervalTrigger  # type: ignore[import-untyped]

    start = (datetime.now(UTC) + timedelta(seconds=1)).replace(microsecond=0)

    def add(s: Any) -> None:
        for i in range(JOBS):
            s.add_job(stamp, IntervalTrigger(seconds=1, start_date=start), id=str(i))

    scheduler, ready = _apscheduler(add)
    try:
        result = _burst_rate()
        rss, peak = _rss_mb()
    finally:
        scheduler.shutdown(wait=False)
    return {**result, "ready_s": ready, "rss_mb": rss, "peak_rss_mb": peak}


def aps_lateness() -> dict[str, Any]:
    from apscheduler.triggers.interval import IntervalTrigger

    base = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    base_ts = base.timestamp()

    def late(offset: float) -> None:
        # The planned instant of this fire: base + offset + k * 10 s, the latest <= now.
        _lateness.append((time.time() - base_ts - offset) % 10.0)

    def add(s: Any) -> None:
        for i in range(JOBS):
            s.add_job(late, IntervalTrigger(seconds=10, start_date=base + timedelta(
                milliseconds=i)), args=[i / 1000], id=str(i))

    scheduler, _ = _apscheduler(add)
    try:
        time.sleep(max(0.0, base_ts - time.time()) + WARMUP)
        _lateness.clear()
        t0 = time.perf_counter()
        time.sleep(WINDOW + 1)
        samples, elapsed = list(_lateness), time.perf_counter() - t0
    finally:
        scheduler.shutdown(wait=False)
    return {**_percentiles(samples), "fires_per_s": len(samples) / elapsed}


def aps_idle() -> dict[str, Any]:
    from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]

    now = datetime.now(UTC)

    def add(s: Any) -> None:
        for i in range(JOBS):
            s.add_job(noop, CronTrigger(second=i % 60, minute=i // 60 % 60,
                                        hour=_hour(now, i), timezone=UTC), id=str(i))

    scheduler, ready = _apscheduler(add)
    try:
        time.sleep(1.0)
        cpu0, t0 = time.process_time(), time.perf_counter()
        time.sleep(IDLE_WINDOW)
        cpu1, t1 = time.process_time(), time.perf_counter()
        rss, peak = _rss_mb()
    finally:
        scheduler.shutdown(wait=False)
    return {"ready_s": ready, "idle_cpu_pct": (cpu1 - cpu0) / (t1 - t0) * 100,
            "rss_mb": rss, "peak_rss_mb": peak}


# Run twice, interleaved, best kept: the pairs compared for a ratio see the same machine.
REPEATED = ("aps_throughput", "cronctl_throughput", "aps_lateness", "cronctl_lateness")
SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {
    "aps_throughput": aps_throughput,
    "cronctl_throughput": cronctl_throughput,
    "aps_lateness": aps_lateness,
    "cronctl_lateness": cronctl_lateness,
    "cronctl_tracked_sqlite": cronctl_tracked_sqlite,
    "cronctl_tracked_postgres": cronctl_tracked_postgres,
    "aps_idle": aps_idle,
    "cronctl_idle": cronctl_idle,
}


# --- the parent: run each scenario in a child, print the table -------------------------


def _child(name: str) -> None:
    """Entry point of a child interpreter: run one scenario, print one JSON line."""
    import logging

    logging.basicConfig(level=logging.ERROR)
    result = SCENARIOS[name]()
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)  # do not wait for non-daemon threads a baseline may leave behind


def _run(name: str) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    code = f"from bench.bench_scheduler import _child; _child({name!r})"
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CHILD_TIMEOUT:g}s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT "):])
            return result
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {proc.returncode}: {tail}"}


_brief = brief


def _best(name: str, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if "error" in a or "skipped" in a:
        return b
    if "error" in b or "skipped" in b:
        return a
    if "lateness" in name:
        return a if a.get("p99_ms", 1e9) <= b.get("p99_ms", 1e9) else b
    return a if a.get("burst_fires_per_s", 0) >= b.get("burst_fires_per_s", 0) else b


_fmt = fmt


def _selected(words: list[str]) -> list[str]:
    """Scenario names matching any of ``words`` (all when none), with the APScheduler
    baseline of each matched cronctl scenario, so ratios stay side by side."""
    if not words:
        return list(SCENARIOS)
    picked = {n for n in SCENARIOS if any(w in n for w in words)}
    picked |= {"aps_" + n[len("cronctl_"):] for n in picked if n.startswith("cronctl_")
               and "aps_" + n[len("cronctl_"):] in SCENARIOS}
    return [n for n in SCENARIOS if n in picked]


def main(words: list[str] | None = None) -> None:
    started = time.perf_counter()
    if words is None:
        words = [a for a in sys.argv[1:] if not a.startswith("bench_")]
    names = _selected(words)
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        results[name] = _run(name)
        print(f"  {name}: {_brief(results[name])}", flush=True)
    for name in (n for n in REPEATED if n in names):
        again = _run(name)
        print(f"  {name} (again): {_brief(again)}", flush=True)
        results[name] = _best(name, results[name], again)
    r = results
    rows: list[tuple[str, str, str, str, str, str]] = []

    def row(metric: str, ours: Any, theirs: Any, ratio: str, target: str, ok: bool | None,
            unit: str = "", digits: int = 0) -> None:
        verdict = "-" if ok is None else ("ok" if ok else "MISSED")
        rows.append((metric, _fmt(ours, unit, digits), _fmt(theirs, unit, digits), ratio,
                     target, verdict))

    def get(name: str, key: str) -> Any:
        return r.get(name, {}).get(key)

    ours = get("cronctl_throughput", "burst_fires_per_s")
    theirs = get("aps_throughput", "burst_fires_per_s")
    ratio = ours / theirs if ours and theirs else None
    row("untracked fires/s (burst drain)", ours, theirs,
        _fmt(ratio, "x", 2), ">= 2x APScheduler", None if ratio is None else ratio >= 2)
    row("  burst of 10k drained in", get("cronctl_throughput", "burst_drain_s"),
        get("aps_throughput", "burst_drain_s"), "", "", None, " s", 3)
    row("  sustained fires/s (10k asked)", get("cronctl_throughput", "fires_per_s"),
        get("aps_throughput", "fires_per_s"), "", "", None)
    for pct in ("p50_ms", "p99_ms"):
        ours, theirs = get("cronctl_lateness", pct), get("aps_lateness", pct)
        ratio = ours / theirs if ours and theirs else None
        target = "<= 10 ms" if pct == "p99_ms" else ""
        ok = None if ours is None or pct != "p99_ms" else ours <= 10
        row(f"lateness {pct[:3]} @~1k fires/s", ours, theirs, _fmt(ratio, "x", 2), target,
            ok, " ms", 2)
    ours = get("cronctl_lateness", "fires_per_s")
    row("  (fires/s during lateness run)", ours, get("aps_lateness", "fires_per_s"), "", "",
        None)
    for name, label, floor in (("cronctl_tracked_sqlite", "tracked fires/s SQLite", 500),
                               ("cronctl_tracked_postgres", "tracked fires/s PostgreSQL", 300)):
        ours = get(name, "fires_per_s")
        row(label, ours, None, _fmt(ours / floor, "x", 2) if ours else "",
            f">= {floor}", None if ours is None else ours >= floor)
    ours, theirs = get("cronctl_idle", "idle_cpu_pct"), get("aps_idle", "idle_cpu_pct")
    row("idle CPU, 10k daily jobs", ours, theirs, _fmt(ours / 1.0, "x", 1) if ours else "",
        "<= 1 %",
        None if ours is None else ours <= 1, " %", 2)
    ours, theirs = get("cronctl_idle", "rss_mb"), get("aps_idle", "rss_mb")
    row("resident memory, 10k jobs", ours, theirs, _fmt(ours / 150, "x", 2) if ours else "",
        "<= 150 MB",
        None if ours is None else ours <= 150, " MB", 1)
    peak = max((v for v in (get("cronctl_throughput", "peak_rss_mb"),
                            get("cronctl_tracked_sqlite", "peak_rss_mb"),
                            get("cronctl_idle", "peak_rss_mb")) if v is not None), default=None)
    row("  peak memory (any cronctl run)", peak, get("aps_throughput", "peak_rss_mb"), "",
        "", None, " MB", 1)
    ours, theirs = get("cronctl_idle", "ready_s"), get("aps_idle", "ready_s")
    row("start-up to READY, 10k jobs", ours, theirs, _fmt(ours / 3, "x", 2) if ours else "",
        "<= 3 s",
        None if ours is None else ours <= 3, " s", 2)

    headers = ("metric", "cronctl", "APScheduler 3", "ratio", "target", "")
    print("\nratio: cronctl / APScheduler (higher is better for fires/s, lower for "
          "lateness), or cronctl / target")
    print_table(headers, rows)
    for name, result in r.items():
        if "error" in result or "skipped" in result:
            print(f"note: {name}: {result.get('error') or result.get('skipped')}")
    print(f"(bench_scheduler took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        main()
