"""The fire path as a user meets it: a real ``cronctl run`` process against APScheduler 3.

Every scenario starts a fresh interpreter of its own (``cronctl run`` with its own
``cronctl.toml`` and ``jobs.d`` in a temporary directory; APScheduler in a child of
:func:`_aps_child`), bounded by a timeout. The jobs are ``python:bench._probe:probe``
handlers: each fire appends (planned instant, wall clock at its start) and the process
writes them at exit (:mod:`bench._probe`); APScheduler's jobs use the same probe with the
run time its executor was given. cronctl runs with its defaults (``max_concurrent_jobs =
10``, INFO logging to stderr, here a file); APScheduler 3 is a ``BackgroundScheduler``
with ``ThreadPoolExecutor(10)``, a ``cron`` trigger, and its default job options (for the
burst, ``misfire_grace_time = None``, or it would drop every fire later than 1 s).

Scenarios (the table of issue 11), every-second loads measured over the middle 8 s of a
14 s run:

- ``every1k``: 1,000 every-second jobs: lateness p50/p99 (goal p99 <= 10 ms and <= 1/10 of
  APScheduler's);
- ``every10k``: 10,000 every-second jobs: fires/s served (goal: all 10,000);
- ``burst``: 20,000 jobs planned at one instant: drain rate, fires / (last handler start -
  instant) (goal >= 4x APScheduler's);
- ``tracked_sqlite``, ``tracked_postgres``: 1,000 tracked every-second jobs: lateness p99
  (goals <= 50 ms, <= 100 ms);
- ``reads_sqlite``, ``reads_postgres``: ``history``, ``logs``, ``status``, ``why`` on a
  generated 1M-execution, 3M-log-line database: wall time of the CLI process, median of
  5, against ``cronctl next '0 0 8 * * *'`` (goal <= 2x); the SQLite file is cached in the
  temporary directory, keyed by schema revision;
- ``idle``: 10,000 daily jobs on SQLite: start-up to READY, idle CPU, resident memory.

``python -m bench bench_fire_path`` (``make bench``) runs all (about 6 minutes);
``python -m bench.bench_fire_path burst reads`` only the scenarios whose names contain one
of the words. ``CRONCTL_BENCH_TREE=/path/to/other/checkout`` runs that checkout's
cronctl instead (the bench and APScheduler stay the same): before/after numbers.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._support import (
    ROOT,
    NoPostgres,
    brief,
    cpu_seconds,
    fmt,
    percentiles,
    postgres_database,
    print_table,
    rss_mb,
    tree_env,
)

RUN = 14.0  # every-second loads: seconds after READY
WINDOW = (3.0, 11.0)  # ... of which these are measured (the middle 8 s)
BURST_JOBS = 20_000
BURST_MARGIN = 20.0  # the burst's instant: this long after the process is spawned
IDLE_WINDOW = 5.0  # CPU time is counted in 10 ms ticks: 0.2 % resolution
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 40.0
PROBE_MODULE = "cronctl_bench_probe"
TARGET = f"python:{PROBE_MODULE}:probe"

# --- one child process --------------------------------------------------------------


@dataclass
class Child:
    popen: subprocess.Popen[bytes]
    folder: Path
    stderr: Path
    probe: Path
    spawned: float  # wall clock

    def ready(self, marker: str, timeout: float = READY_TIMEOUT) -> float:
        """Wall clock when ``marker`` appeared on stderr (polled every 20 ms)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(f"exited {self.popen.returncode} before READY: "
                                   f"{self.tail()}")
            if marker in self.stderr.read_text(errors="replace"):
                return time.time()
            time.sleep(0.02)
        raise RuntimeError(f"not READY after {timeout:g}s")

    def tail(self) -> str:
        lines = self.stderr.read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def stop(self) -> list[tuple[float, float]]:
        """SIGTERM, wait (SIGKILL past the timeout); the probe's samples."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise RuntimeError(f"still running {STOP_TIMEOUT:g}s after SIGTERM") from None
        if not self.probe.exists():
            raise RuntimeError(f"no probe samples (exit {self.popen.returncode}: "
                               f"{self.tail()})")
        from bench._probe import load

        return load(str(self.probe))  # (the file format is the same module's)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def _spawn(cmd: list[str], folder: Path, *, aps: bool = False) -> Child:
    # cronctl imports the probe as a top-level module copied next to its config, so that
    # TREE's cronctl (maybe another checkout, without bench/_probe.py) can run it.
    shutil.copy(ROOT / "bench" / "_probe.py", folder / f"{PROBE_MODULE}.py")
    env = tree_env(folder) if not aps else tree_env(folder, ROOT)
    probe = folder / "probe.bin"
    env["CRONCTL_BENCH_PROBE_OUT"] = str(probe)
    stderr = folder / "stderr.log"
    with open(stderr, "wb") as err:
        popen = subprocess.Popen(cmd, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=err)
    return Child(popen, folder, stderr, probe, time.time())


def _sleep_until(wall: float) -> None:
    delay = wall - time.time()
    if delay > 0:
        time.sleep(delay)


# --- cronctl --------------------------------------------------------------------------


def _cronctl(folder: Path, schedules: list[str], *, database: str = "none",
             tracked: bool = False) -> Child:
    """``cronctl run`` on ``len(schedules)`` probe jobs (one ``cron`` expression each)."""
    jobs = folder / "jobs.d"
    jobs.mkdir()
    (jobs / "bench.toml").write_text("".join(
        f'[jobs.j{i:05d}]\ncron = "{cron}"\ntarget = "{TARGET}"\nmax_attempts = 1\n\n'
        for i, cron in enumerate(schedules)))
    (folder / "cronctl.toml").write_text(
        "[scheduler]\n"
        f"database = {json.dumps(database)}\n"
        f"tracked = {'true' if tracked else 'false'}\n"
        'jobs_dir = "jobs.d"\n'
        f'node_id = "bench-{os.getpid()}"\n'
        'shutdown_timeout = "5s"\n')
    return _spawn([sys.executable, "-m", "cronctl", "-c", "cronctl.toml", "run"], folder)


CRONCTL_READY = " ready node="
APS_READY = "APS READY"

# --- APScheduler 3 (a child of its own) ---------------------------------------------------


def _aps(folder: Path, spec: dict[str, Any]) -> Child:
    (folder / "spec.json").write_text(json.dumps(spec))
    code = "from bench.bench_fire_path import _aps_child; _aps_child('spec.json')"
    return _spawn([sys.executable, "-c", code], folder, aps=True)


def _aps_child(spec_path: str) -> None:
    """Entry point of the APScheduler child: schedule, say READY, run until SIGTERM, write
    the probe's samples and exit."""
    import logging
    import threading
    from datetime import UTC, datetime

    import cronctl_bench_probe as _probe  # type: ignore[import-not-found]
    from apscheduler.executors.pool import ThreadPoolExecutor  # type: ignore[import-untyped]
    from apscheduler.schedulers.background import (  # type: ignore[import-untyped]
        BackgroundScheduler,
    )
    from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]

    spec = json.loads(Path(spec_path).read_text())
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    _probe.patch_apscheduler()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    defaults: dict[str, Any] = {}
    if spec.get("no_grace"):
        defaults["misfire_grace_time"] = None
    scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(10)},
                                    job_defaults=defaults, timezone=UTC)
    for i, fields in enumerate(spec["crons"]):
        second, minute, hour = fields.split()[:3]
        scheduler.add_job(_probe.aps_probe, CronTrigger(second=second, minute=minute,
                                                        hour=hour, timezone=UTC), id=str(i))
    scheduler.start()
    print(f"{APS_READY} at {datetime.now(UTC).isoformat()}", file=sys.stderr, flush=True)
    stop.wait()
    scheduler.shutdown(wait=False)
    _probe.dump()
    os._exit(0)  # not waiting for the pool's threads to run the backlog


# --- the load scenarios -----------------------------------------------------------------


def _crons_every_second(n: int) -> list[str]:
    return ["* * * * * *"] * n


def _crons_at(instant: float, n: int) -> list[str]:
    t = time.gmtime(instant)
    return [f"{t.tm_sec} {t.tm_min} {t.tm_hour} * * *"] * n


def _start(side: str, folder: Path, crons: list[str], **kw: Any) -> Child:
    if side == "cronctl":
        return _cronctl(folder, crons, database=kw.get("database", "none"),
                        tracked=kw.get("tracked", False))
    return _aps(folder, {"crons": crons, "no_grace": kw.get("no_grace", False)})


def every_second(side: str, n: int, **kw: Any) -> dict[str, Any]:
    """``n`` every-second jobs for RUN seconds after READY; the WINDOW's fires."""
    with tempfile.TemporaryDirectory(prefix="cronctl-bench-") as tmp:
        child = _start(side, Path(tmp), _crons_every_second(n), **kw)
        try:
            ready = child.ready(CRONCTL_READY if side == "cronctl" else APS_READY)
            w0, w1 = math.ceil(ready + WINDOW[0]), math.ceil(ready + WINDOW[0]) + 8.0
            _sleep_until(w0)
            cpu0 = cpu_seconds(child.popen.pid)
            _sleep_until(w1)
            cpu1 = cpu_seconds(child.popen.pid)
            rss, _peak = rss_mb(child.popen.pid)
            _sleep_until(ready + RUN)
            samples = child.stop()
        finally:
            child.kill()
    late = [started - planned for planned, started in samples if w0 <= planned < w1]
    served = sum(1 for _planned, started in samples if w0 <= started < w1) / (w1 - w0)
    return {**percentiles(late), "fires_per_s": served, "asked_per_s": n,
            "ready_s": ready - child.spawned, "cpu_pct": (cpu1 - cpu0) / (w1 - w0) * 100,
            "rss_mb": rss}


def burst(side: str, n: int = BURST_JOBS) -> dict[str, Any]:
    """``n`` jobs planned at one instant, BURST_MARGIN s after the spawn: the drain rate."""
    instant = float(math.ceil(time.time() + BURST_MARGIN))
    with tempfile.TemporaryDirectory(prefix="cronctl-bench-") as tmp:
        child = _start(side, Path(tmp), _crons_at(instant, n), no_grace=True)
        try:
            ready = child.ready(CRONCTL_READY if side == "cronctl" else APS_READY,
                                timeout=BURST_MARGIN + 30)
            if ready > instant - 0.5:
                raise RuntimeError(f"READY {ready - child.spawned:.1f}s after the spawn: "
                                   f"later than the burst (raise BURST_MARGIN)")
            _sleep_until(instant + 0.5)
            # Drained once the process goes quiet (a 0.25 s slice under 10 % CPU).
            deadline = instant + 30
            last = cpu_seconds(child.popen.pid)
            while time.time() < deadline:
                time.sleep(0.25)
                now = cpu_seconds(child.popen.pid)
                if now - last < 0.025:
                    break
                last = now
            rss, _peak = rss_mb(child.popen.pid)
            samples = child.stop()
        finally:
            child.kill()
    starts = [started for planned, started in samples if abs(planned - instant) < 1e-3]
    if not starts:
        return {"error": "no fire of the burst ran"}
    drain = max(starts) - instant
    return {"drain_fires_per_s": len(starts) / max(drain, 1e-6), "drain_s": drain,
            "fired": len(starts), "planned": n, "first_ms": (min(starts) - instant) * 1000,
            "ready_s": ready - child.spawned, "rss_mb": rss}


def tracked_sqlite() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cronctl-bench-db-") as tmp:
        return every_second("cronctl", 1000, database=f"sqlite:///{tmp}/state.db",
                            tracked=True)


def tracked_postgres() -> dict[str, Any]:
    try:
        with postgres_database() as url:
            return every_second("cronctl", 1000, database=url, tracked=True)
    except NoPostgres as exc:
        return {"skipped": str(exc)}


def idle(side: str) -> dict[str, Any]:
    """10,000 daily jobs, none due for hours: READY, then CPU and memory while idle."""
    hour = (time.gmtime().tm_hour + 12) % 24
    crons = [f"{i % 60} {i // 60 % 60} {(hour + i // 3600) % 24} * * *" for i in range(10_000)]
    with tempfile.TemporaryDirectory(prefix="cronctl-bench-") as tmp:
        kw = ({"database": f"sqlite:///{tmp}/state.db", "tracked": True}
              if side == "cronctl" else {})
        child = _start(side, Path(tmp), crons, **kw)
        try:
            ready = child.ready(CRONCTL_READY if side == "cronctl" else APS_READY)
            time.sleep(1.0)  # start-up work (definition snapshot, first polls) settles
            cpu0, t0 = cpu_seconds(child.popen.pid), time.monotonic()
            time.sleep(IDLE_WINDOW)
            cpu1, t1 = cpu_seconds(child.popen.pid), time.monotonic()
            rss, peak = rss_mb(child.popen.pid)
            child.stop()
        finally:
            child.kill()
    return {"ready_s": ready - child.spawned, "idle_cpu_pct": (cpu1 - cpu0) / (t1 - t0) * 100,
            "rss_mb": rss, "peak_rss_mb": peak}


# --- the read commands --------------------------------------------------------------------


def reads(backend: str) -> dict[str, Any]:
    from bench._bigdb import big_postgres, big_sqlite, command_wall, read_commands

    try:
        if backend == "sqlite":
            with big_sqlite() as (folder, base):
                return command_wall(folder, read_commands(base))
        with big_postgres() as (folder, base):
            return command_wall(folder, read_commands(base))
    except NoPostgres as exc:
        return {"skipped": str(exc)}


# --- the parent --------------------------------------------------------------------------

SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {
    "every1k_aps": lambda: every_second("aps", 1000),
    "every1k_cronctl": lambda: every_second("cronctl", 1000),
    "every10k_aps": lambda: every_second("aps", 10_000),
    "every10k_cronctl": lambda: every_second("cronctl", 10_000),
    "burst_aps": lambda: burst("aps"),
    "burst_cronctl": lambda: burst("cronctl"),
    "tracked_sqlite": tracked_sqlite,
    "tracked_postgres": tracked_postgres,
    "reads_sqlite": lambda: reads("sqlite"),
    "reads_postgres": lambda: reads("postgres"),
    "idle_aps": lambda: idle("aps"),
    "idle_cronctl": lambda: idle("cronctl"),
}


def _run(name: str) -> dict[str, Any]:
    try:
        return SCENARIOS[name]()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _selected(words: list[str]) -> list[str]:
    if not words:
        return list(SCENARIOS)
    return [n for n in SCENARIOS if any(w in n for w in words)]


def _ratio(ours: Any, theirs: Any) -> float | None:
    if isinstance(ours, int | float) and isinstance(theirs, int | float) and theirs:
        return float(ours) / float(theirs)
    return None


def report(r: dict[str, dict[str, Any]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []

    def get(name: str, key: str) -> Any:
        return r.get(name, {}).get(key)

    def row(metric: str, ours: Any, theirs: Any, goal: str, ratio: float | None,
            ok: bool | None, unit: str = "", digits: int = 0) -> None:
        verdict = "" if ok is None else ("ok" if ok else "MISSED")
        rows.append((metric, fmt(ours, unit, digits), fmt(theirs, unit, digits), goal,
                     fmt(ratio, "x", 2), verdict))

    for pct in ("p50_ms", "p99_ms"):
        ours, theirs = get("every1k_cronctl", pct), get("every1k_aps", pct)
        ratio = _ratio(ours, theirs)
        ok = None if pct == "p50_ms" or ours is None else (
            ours <= 10 and ratio is not None and ratio <= 0.1)
        row(f"1k every-second: lateness {pct[:3]}", ours, theirs,
            "<= 10 ms, <= 0.1x" if pct == "p99_ms" else "", ratio, ok, " ms", 1)
    ours, theirs = get("every10k_cronctl", "fires_per_s"), get("every10k_aps", "fires_per_s")
    row("10k every-second: fires/s served", ours, theirs, "10,000", _ratio(ours, theirs),
        None if ours is None else ours >= 9_900)
    ours, theirs = get("every10k_cronctl", "p99_ms"), get("every10k_aps", "p99_ms")
    row("  10k every-second: lateness p99", ours, theirs, "", _ratio(ours, theirs), None,
        " ms", 0)
    ours, theirs = get("burst_cronctl", "drain_fires_per_s"), get("burst_aps",
                                                                   "drain_fires_per_s")
    ratio = _ratio(ours, theirs)
    row("20k burst: drain rate fires/s", ours, theirs, ">= 4x", ratio,
        None if ratio is None else ratio >= 4)
    row("  20k burst: last start after", get("burst_cronctl", "drain_s"),
        get("burst_aps", "drain_s"), "", None, None, " s", 2)
    for name, label, goal in (("tracked_sqlite", "1k tracked SQLite: lateness p99", 50.0),
                              ("tracked_postgres", "1k tracked PostgreSQL: lateness p99",
                               100.0)):
        ours = get(name, "p99_ms")
        row(label, ours, None, f"<= {goal:g} ms", _ratio(ours, goal),
            None if ours is None else ours <= goal, " ms", 1)
    for backend in ("sqlite", "postgres"):
        result = r.get(f"reads_{backend}", {})
        base = result.get("next_ms")
        for command, wall in result.get("commands", {}).items():
            ratio = _ratio(wall, base)
            row(f"{command} ({backend}) wall", wall, base, "<= 2x next", ratio,
                None if ratio is None else ratio <= 2, " ms")
    ours, theirs = get("idle_cronctl", "ready_s"), get("idle_aps", "ready_s")
    row("start-up to READY, 10k jobs", ours, theirs, "<= 3 s", _ratio(ours, 3.0),
        None if ours is None else ours <= 3, " s", 2)
    ours, theirs = get("idle_cronctl", "idle_cpu_pct"), get("idle_aps", "idle_cpu_pct")
    row("idle CPU, 10k daily jobs", ours, theirs, "<= 1 %", _ratio(ours, 1.0),
        None if ours is None else ours <= 1, " %", 2)
    ours, theirs = get("idle_cronctl", "rss_mb"), get("idle_aps", "rss_mb")
    row("resident memory, 10k jobs", ours, theirs, "<= 150 MB", _ratio(ours, 150.0),
        None if ours is None else ours <= 150, " MB", 1)
    ours, theirs = get("every10k_cronctl", "rss_mb"), get("every10k_aps", "rss_mb")
    row("  memory under 10k fires/s", ours, theirs, "", None, None, " MB", 1)
    return rows


def main(words: list[str] | None = None) -> None:
    started = time.perf_counter()
    if words is None:
        words = [a for a in sys.argv[1:] if not a.startswith("bench_")]
    results: dict[str, dict[str, Any]] = {}
    for name in _selected(words):
        results[name] = _run(name)
        print(f"  {name}: {brief(results[name])}", flush=True)
    print("\nbaseline: APScheduler 3 in the same run (for the read commands: "
          "`cronctl next '0 0 8 * * *'`); ratio: cronctl / baseline (or / goal)")
    print_table(("metric", "cronctl", "baseline", "goal", "ratio", ""), report(results))
    for name, result in results.items():
        if "error" in result or "skipped" in result:
            print(f"note: {name}: {result.get('error') or result.get('skipped')}")
    print(f"(bench_fire_path took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
