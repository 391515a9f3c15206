"""A job writing 1 GiB at full speed next to 100 every-second jobs (SPEC section 9): the
lateness of the other jobs' fires while it writes, and how much the scheduler's RSS grows.

One real ``cronctl run`` on SQLite: 100 jobs on ``* * * * * *`` (``true``) and one
``flood`` job that waits 8 s (the scheduler's RSS at a steady state is read meanwhile),
then writes 1 GiB of 80-byte lines (``yes … | head -c 1G``). Lateness is started minus
planned of the 100 jobs' executions, from the store: before the flood, and planned while
it ran. The RSS is sampled every 50 ms from /proc.

    .venv/bin/python -m bench bench_output
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from bench._support import TREE, fmt, percentiles, print_table, rss_mb, tree_env

JOBS = 100
WAIT = 8  # seconds before the flood starts
LINE = "x" * 79  # + newline: 80 bytes a line
FLOOD = f"sleep {WAIT}; yes {LINE} | head -c 1G"
BUDGET_MB = 50.0


def _project(root: Path) -> Path:
    jobs = root / "jobs.d"
    jobs.mkdir()
    text = "".join(f'[jobs.tick{i:03d}]\ncron = "* * * * * *"\ncommand = ["true"]\n'
                   f"max_attempts = 1\n\n" for i in range(JOBS))
    text += ('[jobs.flood]\ncron = "* * * * * *"\nmax_attempts = 1\nshell = true\n'
             f'command = "{FLOOD}"\n')
    (jobs / "jobs.toml").write_text(text)
    config = root / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "sqlite:///{root / "state.db"}"\n'
                      f'jobs_dir = "{jobs}"\nnode_id = "bench"\nmax_concurrent_jobs = 200\n'
                      'progress_flush_interval = "1s"\nshutdown_timeout = "5s"\n')
    return config


def _sample(pid: int, until: threading.Event, out: list[tuple[float, float]]) -> None:
    while not until.is_set():
        out.append((time.time(), rss_mb(pid)[0]))
        time.sleep(0.05)


def run_once() -> dict[str, float]:
    from cronctl.store import open_store

    with tempfile.TemporaryDirectory(prefix="cronctl-bench-output-") as tmp:
        root = Path(tmp)
        config = _project(root)
        proc = subprocess.Popen([sys.executable, "-m", "cronctl", "-c", str(config), "run"],
                                cwd=root, env=tree_env(), stdout=subprocess.DEVNULL,
                                stderr=(root / "run.log").open("w"))
        samples: list[tuple[float, float]] = []
        stop = threading.Event()
        sampler = threading.Thread(target=_sample, args=(proc.pid, stop, samples), daemon=True)
        sampler.start()
        store = None
        try:
            flood = None
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                time.sleep(0.5)
                if store is None and (root / "state.db").exists():
                    try:
                        store = open_store(f"sqlite:///{root / 'state.db'}", node_id="reader")
                    except Exception:
                        store = None
                        continue
                if store is None:
                    continue
                done = [r for r in store.list_executions(job_id="flood", limit=5)
                        if r.status.is_final]
                if done:
                    flood = done[-1]
                    break
            time.sleep(2)  # a few fires after the flood, then stop
        finally:
            stop.set()
            proc.terminate()
            proc.wait(30)
        if flood is None or store is None:
            raise SystemExit(f"the flood did not finish:\n{(root / 'run.log').read_text()}")
        started, finished = flood.started_at, flood.finished_at
        assert started is not None and finished is not None
        output_from = started.timestamp() + WAIT  # (the sleep before the output)
        rows = store.list_executions(limit=None)
        skips = store.list_skips(limit=None)
        logs = store.read_logs(flood.id)
        store.close()
    ticks = [r for r in rows if r.job_id != "flood" and r.started_at is not None]

    def late(lo: float, hi: float) -> list[float]:
        return [(r.started_at - r.scheduled_at).total_seconds() for r in ticks
                if r.started_at is not None and lo <= r.scheduled_at.timestamp() < hi]

    before = late(output_from - WAIT + 2, output_from)
    during = late(output_from, finished.timestamp())
    def skipped_in(lo: float, hi: float) -> dict[str, int]:
        found: dict[str, int] = {}
        for run in skips:
            if run.job_id != "flood" and lo <= run.first_at.timestamp() < hi:
                found[run.reason] = found.get(run.reason, 0) + run.count
        return found

    skipped = skipped_in(output_from, finished.timestamp())
    skipped_before = skipped_in(output_from - WAIT + 2, output_from)
    steady = [mb for t, mb in samples if output_from - 3 <= t < output_from]
    peak = [mb for t, mb in samples if output_from <= t <= finished.timestamp() + 1]
    return {
        "flood_seconds": finished.timestamp() - output_from,
        "flood_mb_per_s": 1024 / max(1e-9, finished.timestamp() - output_from),
        "kept_lines": float(len(logs)),
        "before_p99_ms": percentiles(before).get("p99_ms", float("nan")),
        "during_p50_ms": percentiles(during).get("p50_ms", float("nan")),
        "during_p99_ms": percentiles(during).get("p99_ms", float("nan")),
        "during_max_ms": percentiles(during).get("max_ms", float("nan")),
        "during_fires": float(len(during)),
        "during_skipped": float(sum(skipped.values())),
        "before_fires": float(len(before)),
        "before_skipped": float(sum(skipped_before.values())),
        "_skips": skipped,
        "rss_steady_mb": max(steady) if steady else float("nan"),
        "rss_peak_mb": max(peak) if peak else float("nan"),
        "_dropped_line": next((line.message for line in logs if "dropped" in line.message), ""),
    }


def main() -> None:
    print(f"output: {JOBS} every-second jobs while one job writes 1 GiB at full speed "
          f"(cronctl of {TREE}; started {datetime.now().isoformat(timespec='seconds')})")
    result = run_once()
    growth = result["rss_peak_mb"] - result["rss_steady_mb"]
    print_table(["measure", "value"], [
        ["flood: seconds to write 1 GiB", fmt(result["flood_seconds"], " s", 1)],
        ["flood: throughput", fmt(result["flood_mb_per_s"], " MiB/s")],
        ["flood: job log lines kept", fmt(result["kept_lines"])],
        ["fires / skipped before the flood", f"{fmt(result['before_fires'])} / "
                                             f"{fmt(result['before_skipped'])}"],
        ["lateness before the flood, p99", fmt(result["before_p99_ms"], " ms", 1)],
        ["lateness during the flood, p50", fmt(result["during_p50_ms"], " ms", 1)],
        ["lateness during the flood, p99", fmt(result["during_p99_ms"], " ms", 1)],
        ["lateness during the flood, max", fmt(result["during_max_ms"], " ms", 1)],
        ["fires planned during the flood", fmt(result["during_fires"])],
        ["instants skipped during the flood", fmt(result["during_skipped"])],
        ["scheduler RSS before the flood", fmt(result["rss_steady_mb"], " MB", 1)],
        ["scheduler RSS peak during it", fmt(result["rss_peak_mb"], " MB", 1)],
        ["RSS growth (budget 50 MB)", fmt(growth, " MB", 1)],
    ])
    print(f"  the flood's log says: {result['_dropped_line']}")
    if result["_skips"]:
        print(f"  skip reasons during the flood: {result['_skips']}")
    if growth > BUDGET_MB:
        print(f"  OVER BUDGET: the RSS grew by {growth:.1f} MB")


if __name__ == "__main__":
    main()
