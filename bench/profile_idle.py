"""Where an idle scheduler's CPU goes: the runtime in-process, per thread.

``python -m bench.profile_idle [--jobs N] [--db sqlite|postgres] [--seconds S] [--profile]``

Runs what ``cronctl run`` runs on N tracked daily jobs none of which is due for hours
(the ``idle`` scenario of :mod:`bench.bench_fire_path`), waits for the start-up work to
settle, then reports the CPU time each thread spent over S seconds, in milliseconds per
second (``time.pthread_getcpuclockid``: no profiler). ``--profile`` adds cProfile on
every thread and prints the calls with the most cumulative time per second.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import logging
import pstats
import tempfile
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._support import NoPostgres, postgres_database
from bench.profile_fire_path import _profile_threads, _thread_cpu


def _jobs(n: int) -> list[Any]:
    from cronctl.jobs.model import Isolation, JobDefinition, PythonTarget

    hour = (datetime.now(UTC).hour + 12) % 24
    return [JobDefinition(id=f"j{i:05d}", target=PythonTarget("bench._probe", "probe"),
                          isolation=Isolation.THREAD,
                          cron=f"{i % 60} {i // 60 % 60} {(hour + i // 3600) % 24} * * *",
                          tracked=True, max_attempts=1) for i in range(n)]


def run(n: int, db: str, seconds: float, profile: bool) -> None:
    from cronctl.config import Config
    from cronctl.dispatch import default_dispatcher
    from cronctl.dispatch.interceptors import Interceptors
    from cronctl.runtime import Scheduler
    from cronctl.runtime.logsetup import configure_logging
    from cronctl.store import open_store

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        url = (f"sqlite:///{tmp}/state.db" if db == "sqlite"
               else stack.enter_context(postgres_database("cronctl_idle")))
        configure_logging(logging.INFO, "text", stack.enter_context(open(tmp / "run.log", "w")))
        node = f"idle-{uuid.uuid4().hex[:6]}"
        config = Config(path=None, base_dir=tmp, database=url, jobs_dir=tmp, node_id=node,
                        tracked=True, shutdown_timeout=timedelta(seconds=5))
        store = open_store(url, node_id=node)
        stack.callback(store.close)
        profiles: list[cProfile.Profile] = []
        if profile:
            _profile_threads(profiles, every=True)
        scheduler = Scheduler(config, _jobs(n), store,
                              default_dispatcher(config.max_concurrent_jobs,
                                                 interceptors=Interceptors(())))
        scheduler.start()
        stack.callback(scheduler.stop, 10)
        gc.collect()
        time.sleep(2.0)  # the start-up work (snapshot, first polls) settles
        for p in profiles:
            p.clear()
        cpu0, t0 = _thread_cpu(), time.monotonic()
        time.sleep(seconds)
        cpu1, wall = _thread_cpu(), time.monotonic() - t0
        for p in profiles:
            p.disable()
    print(f"idle, {n:,} daily jobs, database {db}, {wall:.1f} s: CPU per thread, ms/s")
    total = 0.0
    for name, t1 in sorted(cpu1.items(), key=lambda kv: cpu0.get(kv[0], 0.0) - kv[1]):
        used = (t1 - cpu0.get(name, 0.0)) / wall * 1000
        total += used
        if used >= 0.05:
            print(f"  {name:<24} {used:6.2f}")
    print(f"  {'all threads':<24} {total:6.2f}  ({total / 10:.2f} % of one core)")
    if profiles:
        stats = pstats.Stats(profiles[0])
        for p in profiles[1:]:
            stats.add(p)
        raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
        print("\ncProfile, cumulative ms/s (top 25):")
        for (path, line, fn), (_cc, calls, _tt, cum, _callers) in sorted(
                raw.items(), key=lambda kv: -kv[1][3])[:25]:
            where = f"{Path(path).name}:{line}" if line else path
            print(f"  {cum / wall * 1000:8.2f} {calls / wall:8.1f}/s  {fn} ({where})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--db", default="sqlite", choices=("sqlite", "postgres"))
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    try:
        run(args.jobs, args.db, args.seconds, args.profile)
    except NoPostgres as exc:
        print(f"skipped: {exc}")


if __name__ == "__main__":
    main()
