"""Where the time of a burst goes: the runtime in-process, one burst, measured per fire.

``python -m bench.profile_fire_path [cpu|profile] [--jobs N] [--db none|sqlite|postgres]
[--gc default|freeze|disable] [--quiet]``

Runs what ``cronctl run`` runs (:class:`cronctl.runtime.Scheduler`, the default
dispatcher, the process log at INFO into a file, as ``cronctl run`` writes it to
stderr) on N ``python:bench._probe:probe`` jobs planned at one instant, and reports:

- ``cpu``: the CPU time each thread spent from the instant until the burst drained
  (``time.pthread_getcpuclockid``: nanoseconds, no profiler), per fire; the wall drain
  time; the cyclic garbage collector's runs and time during the burst (``gc.callbacks``);
- ``profile``: the same burst with cProfile on the scheduler thread and on the worker
  threads: the functions with the most own time, in microseconds per fire (cProfile
  roughly doubles the cost of small calls: read it for shares, ``cpu`` for totals).

``--gc freeze`` calls ``gc.freeze()`` once the scheduler is READY (every object alive
then is moved to the permanent generation, which collections no longer walk);
``--gc disable`` turns the collector off for the run. ``--db sqlite|postgres`` makes the
jobs tracked (rows written before dispatch). See bench/PROFILE.md for the findings.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import logging
import math
import pstats
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import _probe
from bench._support import NoPostgres, postgres_database


def _jobs(n: int, instant: datetime, tracked: bool) -> list[Any]:
    from cronctl.jobs.model import Isolation, JobDefinition, PythonTarget

    cron = f"{instant.second} {instant.minute} {instant.hour} * * *"
    return [JobDefinition(id=f"j{i:05d}", target=PythonTarget("bench._probe", "probe"),
                          isolation=Isolation.THREAD,
                          cron=cron, tracked=tracked, max_attempts=1) for i in range(n)]


class GcTimer:
    """Collections and their time while ``active`` (gc.callbacks)."""

    def __init__(self) -> None:
        self.active = False
        self.runs = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if not self.active:
            return
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            generation = info["generation"]
            self.runs[generation] += 1
            self.seconds[generation] += time.perf_counter() - self._t0


def _thread_cpu() -> dict[str, float]:
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        if thread.ident is None or thread is threading.main_thread():
            continue
        try:
            clock = time.pthread_getcpuclockid(thread.ident)
            out[thread.name] = time.clock_gettime(clock)
        except OSError:  # the thread just ended
            pass
    return out


def _group(name: str) -> str:
    if name.startswith("cronctl-job"):
        return "workers (handlers)"
    return {"cronctl-scheduler": "scheduler thread", "cronctl-io": "I/O thread"}.get(
        name, f"other ({name})")


def run(mode: str, n: int, db: str, gc_mode: str, quiet: bool) -> None:
    from cronctl.config import Config
    from cronctl.dispatch import default_dispatcher
    from cronctl.dispatch.interceptors import Interceptors
    from cronctl.runtime import Scheduler
    from cronctl.runtime.logsetup import configure_logging
    from cronctl.store import open_store

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        url = {"none": "none", "sqlite": f"sqlite:///{tmp}/state.db"}.get(db)
        if url is None:
            url = stack.enter_context(postgres_database("cronctl_profile"))
        log_file = stack.enter_context(open(tmp / "run.log", "w"))
        configure_logging(logging.WARNING if quiet else logging.INFO, "text", log_file)
        tracked = db != "none"
        instant = datetime.now(UTC).replace(microsecond=0) + timedelta(
            seconds=math.ceil(3 + n / 8000))
        node = f"profile-{uuid.uuid4().hex[:6]}"
        config = Config(path=None, base_dir=tmp, database=url, jobs_dir=tmp, node_id=node,
                        tracked=tracked, shutdown_timeout=timedelta(seconds=5))
        store = open_store(url, node_id=node)
        stack.callback(store.close)
        dispatcher = default_dispatcher(config.max_concurrent_jobs,
                                        interceptors=Interceptors(()))
        profiles: list[cProfile.Profile] = []
        if mode == "profile":
            _profile_threads(profiles)
        scheduler = Scheduler(config, _jobs(n, instant, tracked), store, dispatcher)
        scheduler.start()
        stack.callback(scheduler.stop, 10)
        if gc_mode == "freeze":
            gc.freeze()
        elif gc_mode == "disable":
            gc.disable()
        timer = GcTimer()
        gc.callbacks.append(timer)
        _probe._samples.clear()
        wait = (instant - datetime.now(UTC)).total_seconds() - 0.2
        if wait < 0:
            raise SystemExit("start-up took longer than the lead time")
        time.sleep(wait)
        cpu0 = _thread_cpu()
        stats0 = [s["collections"] for s in gc.get_stats()]
        timer.active = True
        deadline = time.monotonic() + 60
        while len(_probe._samples) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        scheduler.wait_idle(10)
        timer.active = False
        cpu1 = _thread_cpu()
        stats1 = [s["collections"] for s in gc.get_stats()]
        samples = [(planned.timestamp(), started) for planned, started in _probe._samples]
    _report(n, db, gc_mode, instant.timestamp(), samples, cpu0, cpu1, timer, stats0, stats1)
    if profiles:
        _print_profiles(profiles, n)


def _report(n: int, db: str, gc_mode: str, instant: float, samples: list[tuple[float, float]],
            cpu0: dict[str, float], cpu1: dict[str, float], timer: GcTimer,
            stats0: list[int], stats1: list[int]) -> None:
    starts = sorted(s for p, s in samples if abs(p - instant) < 1e-3)
    drain = starts[-1] - instant if starts else float("nan")
    print(f"burst of {n:,} jobs, database {db}, gc {gc_mode}: {len(starts):,} started; "
          f"first {(starts[0] - instant) * 1000:.1f} ms, last {drain * 1000:.0f} ms after the "
          f"instant: {len(starts) / drain:,.0f} fires/s, {drain / len(starts) * 1e6:.1f} us "
          "of wall per fire")
    groups: dict[str, float] = {}
    for name, t1 in cpu1.items():
        groups[_group(name)] = groups.get(_group(name), 0.0) + t1 - cpu0.get(name, 0.0)
    for group, seconds in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  CPU {group:<22} {seconds * 1000:8.1f} ms  {seconds / n * 1e6:7.1f} us/fire")
    total = sum(groups.values())
    print(f"  CPU {'all threads':<22} {total * 1000:8.1f} ms  {total / n * 1e6:7.1f} us/fire "
          f"(wall {drain * 1000:.0f} ms: {total / drain * 100:.0f} % of one core)")
    runs = [b - a for a, b in zip(stats0, stats1, strict=True)]
    print(f"  gc during the burst: collections per generation {runs}, "
          f"{sum(timer.seconds) * 1000:.1f} ms in all "
          f"({', '.join(f'gen{g} {s * 1000:.1f} ms' for g, s in enumerate(timer.seconds))}); "
          f"{sum(timer.seconds) / n * 1e6:.1f} us/fire")


def _profile_threads(profiles: list[cProfile.Profile], *, every: bool = False) -> None:
    """cProfile on every thread the scheduler starts from now on (scheduler, workers, I/O;
    ``every``: all of them)."""
    original = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        # (The I/O thread's background slices are start-up work, the definitions'
        # snapshot: not a fire's.)
        if not every and (not self.name.startswith(("cronctl-scheduler", "cronctl-job",
                                                    "cronctl-io"))
                          or self.name.endswith("-background")):
            original(self)
            return
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            original(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]


def _print_profiles(profiles: list[cProfile.Profile], n: int, top: int = 30) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profiles[0], stream=out)
    for profile in profiles[1:]:
        stats.add(profile)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
    print(f"\ncProfile, scheduler, worker and I/O threads, own time per fire (top {top}):")
    print(f"  {'us/fire':>8} {'cum us':>8} {'calls/fire':>10}  function")
    for (path, line, fn), (_cc, calls, tottime, cumtime, _callers) in rows:
        where = f"{Path(path).name}:{line}" if line else path
        print(f"  {tottime / n * 1e6:8.2f} {cumtime / n * 1e6:8.2f} {calls / n:10.2f}  "
              f"{fn} ({where})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="cpu", choices=("cpu", "profile"))
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--db", default="none", choices=("none", "sqlite", "postgres"))
    parser.add_argument("--gc", default="default", choices=("default", "freeze", "disable"))
    parser.add_argument("--quiet", action="store_true",
                        help="the process log at WARNING (no per-fire lines)")
    args = parser.parse_args()
    try:
        run(args.mode, args.jobs, args.db, args.gc, args.quiet)
    except NoPostgres as exc:
        print(f"skipped: {exc}")


if __name__ == "__main__":
    main()
