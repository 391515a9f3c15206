"""Validation speed: ``load_jobs`` over 1,000 generated job files (target < 1 s, in
process and as a ``cronctl validate`` subprocess), and the cold start of
``cronctl validate`` on the repository's examples (median, target <= 200 ms).

The generated files mix what real job sets hold: 5- and 6-field cron expressions in
several zones, intervals, commands as arrays and strings, ``python:`` targets, policies.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

FILES = 1000
COLD_RUNS = 9
REPO = Path(__file__).resolve().parents[1]
CRONCTL = Path(sys.executable).parent / "cronctl"

_SCHEDULES = [
    'cron = "0 */5 * * * *"',
    'cron = "30 2 * * *"',
    'cron = "0 0 9 * * MON-FRI"\ntimezone = "Europe/Berlin"',
    'cron = "0 15 3 1,15 * *"\ntimezone = "America/New_York"',
    'cron = "@hourly"',
    'every = "90s"',
    'every = "15m"',
    'cron = "0 30 1 * * *"\ntimezone = "Australia/Lord_Howe"\ndst_fold = "both"',
]
_TARGETS = [
    'command = ["echo", "hello"]',
    'command = "backup --to /var/backups --keep 7"',
    'target = "python:os.path:join"',
    'command = "ls | wc -l"\nshell = true',
]


def generate(directory: Path, count: int = FILES) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = (
            f"# generated job {i}\n[jobs.job-{i:04d}]\n"
            f'description = "generated job number {i}"\n'
            f"{_SCHEDULES[i % len(_SCHEDULES)]}\n{_TARGETS[i % len(_TARGETS)]}\n"
            f'max_attempts = {1 + i % 5}\nretry_backoff = "{5 + i % 20}s"\n'
            f'jitter = "{i % 10}s"\nparameters = {{ index = {i} }}\n'
        )
        if i % 7 == 0:
            body += 'mode = "single_instance"\n'
        (directory / f"job-{i:04d}.toml").write_text(body, encoding="utf-8")


def _env() -> dict[str, str]:
    """The caller's environment minus cronctl settings, and with bytecode caching on (an
    installed cronctl has its .pyc files; PYTHONDONTWRITEBYTECODE would make every run
    recompile every module and measure the compiler instead)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("CRONCTL_") and k != "PYTHONDONTWRITEBYTECODE"}


def bench_in_process(jobs_dir: Path) -> tuple[float, int]:
    from cronctl.config import Config
    from cronctl.jobs.loader import load_jobs

    config = Config(path=None, base_dir=jobs_dir.parent, database="sqlite:///bench.db",
                    jobs_dir=jobs_dir, node_id="bench")
    now = datetime.now(UTC)
    best = float("inf")
    jobs = 0
    for _ in range(3):
        start = time.perf_counter()
        result = load_jobs(config.job_settings, now=now)
        best = min(best, time.perf_counter() - start)
        if result.violations:
            raise SystemExit(f"generated jobs are invalid: {result.violations[0]}")
        jobs = len(result.jobs)
    return best, jobs


def bench_subprocess(args: list[str], cwd: Path, runs: int) -> list[float]:
    """Wall times of ``runs`` runs, after one warm-up run (which writes the .pyc files)."""
    times: list[float] = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run([str(CRONCTL), *args], cwd=cwd, env=_env(),
                              capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"cronctl {' '.join(args)} failed: {proc.stdout}{proc.stderr}")
    return times[1:]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        jobs_dir = Path(tmp) / "jobs.d"
        generate(jobs_dir)
        seconds, jobs = bench_in_process(jobs_dir)
        print(f"load_jobs, {FILES} files ({jobs} jobs incl. installed decorated ones), "
              f"in process: {seconds * 1000:.0f} ms (target < 1000 ms) "
              f"= {seconds / FILES * 1e6:.0f} us per file")
        cli = bench_subprocess(["--jobs-dir", str(jobs_dir), "validate"], Path(tmp), 3)
        print(f"cronctl validate, {FILES} files, subprocess: median "
              f"{statistics.median(cli) * 1000:.0f} ms (target < 1000 ms)")
    cold = bench_subprocess(["validate"], REPO, COLD_RUNS)
    print(f"cronctl validate, repository examples, cold start: median "
          f"{statistics.median(cold) * 1000:.0f} ms, min {min(cold) * 1000:.0f} ms "
          f"over {COLD_RUNS} runs (target <= 200 ms)")
    baseline = bench_subprocess(["--help"], REPO, COLD_RUNS)
    print(f"  for scale: cronctl --help median {statistics.median(baseline) * 1000:.0f} ms; "
          f"python -c pass ~{_bare_python() * 1000:.0f} ms")


def _bare_python() -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    main()
