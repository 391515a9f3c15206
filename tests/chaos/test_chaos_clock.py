"""Fault injection: a node's wall clock stepped forward and back (issue 26, item 3).

Two ``cronctl run`` nodes on PostgreSQL share single_instance jobs firing every second;
node n2's wall clock (only the wall clock: ``tests/clock_shim.c``) steps ahead by less
than ``clock_skew_limit``, by more, and back, over and over, while n1's stays right.
Commands write the planned instant and the real time they started, so the audit does
not only trust the database: 0 fires before their instant, 0 misfire skip records (n1
ran everything; only the instants due while both nodes were stopped for the restart are a
late set), 0 instants run twice, every instant accounted for, and both nodes
start again afterwards (none locked out by a cursor n2 pushed ahead).

``make test`` runs a short round (``CRONCTL_CHAOS_SECONDS``, default 12 here); longer
with a larger value."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from wallclock import REAL_CLOCK_ENV, SteppedClock, build_shim

from cronctl.store import open_store
from cronctl.store.records import SkipRecord

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.postgres,
              pytest.mark.timeout(1800)]

SECONDS = float(os.environ.get("CRONCTL_CHAOS_SECONDS", "12"))
JOBS = ("c1", "c2", "c3")
STEPS = (90.0, 0.0, 400.0, 0.0, 30.0, 0.0)  # the limit is 5 min: under, over, under


def _config(root: Path, url: str, node: str) -> Path:
    path = root / f"{node}.toml"
    path.write_text(f'[scheduler]\ndatabase = "{url}"\njobs_dir = "{root / "jobs.d"}"\n'
                    f'node_id = "{node}"\nheartbeat_interval = "1s"\n'
                    'shutdown_timeout = "2s"\n')
    return path


def _start(root: Path, config: Path, node: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "CRONCTL_DATABASE_URL")}
    with (root / f"{node}.log").open("a") as log:
        return subprocess.Popen([sys.executable, "-m", "cronctl", "-c", str(config), "run"],
                                stdout=subprocess.DEVNULL, stderr=log, cwd=root,
                                env={**base, **env}, start_new_session=True)


def _ready(root: Path, node: str, count: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (root / f"{node}.log").read_text().count(f"ready node={node}") >= count:
            return True
        time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def test_chaos_clock_steps_forward(tmp_path: Path, postgres_url: str) -> None:
    fires = tmp_path / "fires.log"
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "jobs.toml").write_text("".join(
        f'[jobs.{j}]\nevery = "1s"\nmode = "single_instance"\nenv = {REAL_CLOCK_ENV}\n'
        f'command = ["sh", "-c", "echo $CRONCTL_JOB_ID $CRONCTL_SCHEDULED_AT '
        f'$(date -u +%s.%N) >> {fires}"]\n\n' for j in JOBS))
    configs = {n: _config(tmp_path, postgres_url, n) for n in ("n1", "n2")}
    clock = SteppedClock(tmp_path, "n2", build_shim(tmp_path))
    procs = {"n1": _start(tmp_path, configs["n1"], "n1", {}),
             "n2": _start(tmp_path, configs["n2"], "n2", clock.env())}
    try:
        assert _ready(tmp_path, "n1", 1) and _ready(tmp_path, "n2", 1)
        end, step = time.monotonic() + SECONDS, 0
        while time.monotonic() < end:
            clock.set(STEPS[step % len(STEPS)])
            step += 1
            time.sleep(min(2.0, max(end - time.monotonic(), 0.1)))
        clock.set(0)
        time.sleep(1.5)
        down = datetime.now(UTC) - timedelta(seconds=1)
        codes = [_stop(p) for p in procs.values()]
        assert codes == [0, 0]
        # Nobody locked out: both start again on the cursors left behind.
        procs = {n: _start(tmp_path, configs[n], n, clock.env() if n == "n2" else {})
                 for n in ("n1", "n2")}
        assert _ready(tmp_path, "n1", 2), (tmp_path / "n1.log").read_text()
        assert _ready(tmp_path, "n2", 2), (tmp_path / "n2.log").read_text()
        up = datetime.now(UTC) + timedelta(seconds=1)
        time.sleep(1.5)
    finally:
        codes = [_stop(p) for p in procs.values()]
    logs = {n: (tmp_path / f"{n}.log").read_text() for n in ("n1", "n2")}
    assert codes == [0, 0], logs
    assert "Traceback" not in logs["n1"] + logs["n2"]

    early = []
    for line in fires.read_text().splitlines():
        job, planned, real = line.split()
        at = datetime.fromisoformat(planned.replace("Z", "+00:00"))
        if float(real) < at.timestamp() - 0.05:
            early.append((job, planned, real))
    store = open_store(postgres_url, node_id="audit")
    try:
        rows = [r for j in JOBS for r in store.list_executions(job_id=j, limit=None)]
        skips = [s for j in JOBS for s in store.list_skips(job_id=j)]
    finally:
        store.close()
    runs = collections.Counter((r.job_id, r.scheduled_at) for r in rows)
    twice = [k for k, n in runs.items() if n > 1] + [(r.job_id, r.scheduled_at)
                                                      for r in rows if r.attempt > 1]
    # Honest misfires, of instants nobody ran: those of the restart's gap (nobody ran
    # while both nodes were stopped: one late set, dropped behind its late fire), and
    # those a node handled late behind an instant that started after them (a loaded
    # machine). Any other misfire record is false.
    # (a held-up run of several instants: a scheduler stalled past more than one)
    def nobody_ran(s: SkipRecord) -> bool:  # (every job here fires each second)
        return not any((s.job_id, s.first_at + timedelta(seconds=i)) in runs
                       for i in range(int((s.last_at - s.first_at).total_seconds()) + 1))

    misfires = [s for s in skips if s.reason == "misfire" and not (
        s.detail is not None and nobody_ran(s) and (
            (down <= s.first_at and s.last_at <= up
             and "no scheduler could start it" in s.detail)
            or "the scheduler was held up" in s.detail))]
    covered = set(runs)
    for s in skips:
        t = s.first_at
        while t <= s.last_at:
            covered.add((s.job_id, t))
            t += timedelta(seconds=1)
    gaps = []
    for j in JOBS:
        mine = sorted(t for job, t in covered if job == j)
        gaps += [(j, x, y) for x, y in zip(mine, mine[1:], strict=False)
                 if y - x != timedelta(seconds=1)]
    stepped = logs["n2"].count("refusing to act")
    print(f"\nclock chaos {SECONDS:.0f}s: {len(rows)} executions, {len(skips)} skip records "
          f"{dict(collections.Counter(s.reason for s in skips))}, "
          f"n2 refused {stepped} times, early {len(early)}, misfires {len(misfires)}, "
          f"twice {len(twice)}, gaps {len(gaps)}")
    assert early == [] and misfires == [] and twice == [] and gaps == [], (
        early, misfires, twice, gaps)
    assert rows and (SECONDS < 8 or stepped >= 1), logs["n2"]
