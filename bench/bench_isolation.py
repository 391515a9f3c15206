"""Python jobs with ``isolation = "process"`` (the default: warm worker processes, see
cronctl/dispatch/pool.py) side by side with ``isolation = "thread"``, in one run.

Every scenario runs in a fresh child interpreter. The handler is the same for both: it
appends ``planned ran`` (epoch seconds) to a file named in the job's parameters with one
``write`` (an O_APPEND file shared by the worker processes or threads), so what is
measured is where it ran, not how it reports.

- lateness: 1,000 untracked jobs every second, spread 1 ms apart (1,000 fires/s asked
  for): start minus planned, p50 and p99.
- burst: 1,000 untracked jobs every second, all on the whole second: each burst's drain
  (last start minus its planned second).
- tracked: 1,000 tracked jobs every second on SQLite, spread: attempts run per second.

``python -m bench bench_isolation`` (``make bench`` runs it); about a minute. The target:
process within 1.5× of thread on each figure.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench._support import brief, fmt, percentiles, print_table

JOBS = 1000
WARMUP = 2.0
WINDOW = 5.0
CHILD_TIMEOUT = 120.0


def stamp(ctx: Any) -> None:
    """The handler: one line per attempt, written whole."""
    line = f"{ctx.scheduled_at.timestamp():.3f} {time.time():.6f}\n".encode()
    fd = os.open(ctx.parameters["out"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _jobs(isolation: str, tracked: bool, out: Path, spread: bool) -> list[Any]:
    from cronctl.jobs.model import EPOCH, Isolation, JobDefinition, PythonTarget

    return [JobDefinition(id=f"job-{i:04d}", target=PythonTarget("bench.bench_isolation",
                                                                 "stamp"),
                          isolation=Isolation(isolation), every=timedelta(seconds=1),
                          anchor=EPOCH + timedelta(milliseconds=i if spread else 0),
                          tracked=tracked, max_attempts=1,
                          parameters={"out": str(out)}) for i in range(JOBS)]


def _run_scheduler(database: str, jobs: list[Any], tracked: bool, out: Path
                   ) -> list[tuple[float, float]]:
    from cronctl.config import Config
    from cronctl.dispatch import default_dispatcher
    from cronctl.dispatch.interceptors import Interceptors
    from cronctl.runtime import Scheduler
    from cronctl.store import open_store

    config = Config(path=None, base_dir=Path.cwd(), database=database, jobs_dir=Path.cwd(),
                    node_id=f"bench-{uuid.uuid4().hex[:6]}", tracked=tracked,
                    max_concurrent_jobs=10, progress_flush_interval=timedelta(seconds=1))
    store = open_store(database, node_id=config.node_id)
    dispatcher = default_dispatcher(config.max_concurrent_jobs, interceptors=Interceptors(()))
    scheduler = Scheduler(config, jobs, store, dispatcher)
    scheduler.start()
    try:
        time.sleep(WARMUP)
        t0 = time.time()
        time.sleep(WINDOW)
        t1 = time.time()
    finally:
        scheduler.stop(timeout=10)
        store.close()
    stamps = [tuple(map(float, line.split())) for line in out.read_text().splitlines()
              if line.count(" ") == 1]
    return [(p, r) for p, r in stamps if t0 <= p < t1 - 1.5]  # (planned, ran)


def _figures(stamps: list[tuple[float, float]]) -> dict[str, Any]:
    bursts: dict[float, list[float]] = {}
    for planned, ran in stamps:  # (by second: a spread second is one burst too)
        bursts.setdefault(float(int(planned)), []).append(ran)
    drain = [max(runs) - second for second, runs in bursts.items()]
    whole = [len(r) for second, r in bursts.items() if second >= min(bursts) + 1]  # (full)
    sustained = statistics.mean(whole) if whole else 0.0
    return {**percentiles([ran - planned for planned, ran in stamps]),
            "burst_drain_s": statistics.median(drain) if drain else float("nan"),
            "fires_per_s": sustained}


def scenario(isolation: str, tracked: bool, spread: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stamps"
        database = f"sqlite:///{tmp}/bench.db" if tracked else "none"
        return _figures(_run_scheduler(database, _jobs(isolation, tracked, out, spread),
                                       tracked, out))


SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {
    "process_lateness": lambda: scenario("process", False, True),
    "thread_lateness": lambda: scenario("thread", False, True),
    "process_burst": lambda: scenario("process", False, False),
    "thread_burst": lambda: scenario("thread", False, False),
    "process_tracked": lambda: scenario("process", True, True),
    "thread_tracked": lambda: scenario("thread", True, True),
}


def _child(name: str) -> None:
    import logging

    logging.basicConfig(level=logging.ERROR)
    print("RESULT " + json.dumps(SCENARIOS[name]()), flush=True)
    os._exit(0)


def _run(name: str) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    code = f"from bench.bench_isolation import _child; _child({name!r})"
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


def main(words: list[str] | None = None) -> None:
    results = {}
    for name in SCENARIOS:
        results[name] = _run(name)
        print(f"  {name}: {brief(results[name])}", flush=True)
    rows = []
    for scenario_name, metric, unit, digits, lower_is_better in (
            ("lateness", "p50_ms", " ms", 1, True), ("lateness", "p99_ms", " ms", 1, True),
            ("lateness", "fires_per_s", "", 0, False),
            ("burst", "burst_drain_s", " s", 3, True),
            ("tracked", "fires_per_s", "", 0, False)):
        ours = results[f"process_{scenario_name}"].get(metric)
        theirs = results[f"thread_{scenario_name}"].get(metric)
        ratio, ok = "-", None
        if isinstance(ours, int | float) and isinstance(theirs, int | float) and theirs:
            value = ours / theirs if lower_is_better else theirs / max(ours, 1e-9)
            ratio, ok = f"{value:.2f}x", value <= 1.5
        rows.append((f"{scenario_name} {metric}", fmt(ours, unit, digits),
                     fmt(theirs, unit, digits), ratio, "<= 1.5x",
                     "-" if ok is None else ("ok" if ok else "MISSED")))
    print_table(("metric", "process", "thread", "cost", "target", ""), rows)


if __name__ == "__main__":
    main([a for a in sys.argv[1:]])
