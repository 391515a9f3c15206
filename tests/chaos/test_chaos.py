"""Fault injection: three ``cronctl run`` nodes on one database, 31 single_instance
jobs firing every second or three (quick, slow enough to overlap, failing once, hanging
commands killed at their timeout), a node SIGKILLed (its whole process group) and
restarted every few seconds, and on PostgreSQL one restart of the server.

Handlers append what they did to a file, so the audit does not only trust the database:
every planned instant has an execution or a skip record; no instant ran twice or has two
successes; no two attempts of one occurrence ran at the same time; nothing is left
running after the clean stop (a retry still waiting for its backoff stays pending: the
durable retry queue); occurrence ids are stable; fencing tokens of a
job are unique and increase with the start of its attempts.

``make test`` runs a short round on each database (``CRONCTL_CHAOS_SECONDS``, default
20); ``make chaos`` a long one. The figures are printed (``pytest -s``) and written to
``chaos-<db>.json`` in the test's directory.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from private_pg import PrivatePostgres

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus
from cronctl.store import Store, open_store

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(1800)]

SECONDS = float(os.environ.get("CRONCTL_CHAOS_SECONDS", "20"))
LONG = SECONDS >= 120
KILL_EVERY = (8.0, 15.0) if LONG else (3.0, 5.0)
NODES = ("n1", "n2", "n3")

# The handlers' settings: from their environment, or, in a worker process (isolation =
# "process", the default), which starts from cron's small environment, from the
# environment of the scheduler that started it.
SETTING = '''
import os


def _setting(name):
    if name in os.environ:
        return os.environ[name]
    with open(f"/proc/{os.getppid()}/environ", "rb") as parent:
        for item in parent.read().split(b"\\0"):
            key, _, value = item.partition(b"=")
            if key == name.encode():
                return value.decode()
    raise KeyError(name)
'''

HANDLERS = SETTING + '''
import time

LOG = _setting("CRONCTL_CHAOS_LOG")
NODE = _setting("CRONCTL_CHAOS_NODE")
# the scheduler's pid (the audit ends an attempt that wrote no end at its kill): this
# process, or the one that started this worker process
SCHEDULER = os.getpid() if "CRONCTL_CHAOS_LOG" in os.environ else os.getppid()


def _rec(kind, ctx):
    line = (f"{kind} {ctx.job_id} {ctx.scheduled_at.timestamp():.6f} {ctx.attempt} {NODE} "
            f"{SCHEDULER} {time.time():.6f} {ctx.fencing_token}\\n")
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def quick(ctx):
    _rec("S", ctx)
    time.sleep(0.05)
    _rec("E", ctx)


def slow(ctx):
    _rec("S", ctx)
    time.sleep(1.6)
    _rec("E", ctx)


def flaky(ctx):
    _rec("S", ctx)
    time.sleep(0.05)
    _rec("E", ctx)
    if ctx.attempt == 1 and int(ctx.scheduled_at.timestamp()) % 2 == 0:
        raise RuntimeError("fails on its first attempt at even seconds")
'''

# A command that hangs until its timeout kills it; it records its start and its end
# (also when it is terminated) in the same file as the Python handlers. It records its
# scheduler's pid ($PPID), as the Python handlers do (in a thread or a worker): when
# the scheduler is SIGKILLed the shell dies with it (parent-death signal) without
# writing its end, which is then the time of that kill.
# (A command inherits nothing of its scheduler's environment but cron's few variables:
# the log path comes in the job's env, the node from its scheduler's config file name.)
HANG = ('NODE=$(tr "\\000" "\\n" < /proc/$PPID/cmdline | sed -n "/^-c$/{n;p;q}"); '
        'NODE=$(basename "$NODE" .toml); '
        'rec() { echo "$1 $CRONCTL_JOB_ID $(date -d "$CRONCTL_SCHEDULED_AT" +%s.000000) '
        '$CRONCTL_ATTEMPT $NODE $PPID $(date +%s.%N) $CRONCTL_FENCING_TOKEN" '
        '>> "$CRONCTL_CHAOS_LOG"; }; trap \'rec E; exit 143\' TERM; rec S; sleep 30 & wait')


def _jobs(log: Path) -> str:
    out = []
    for i in range(24):
        out.append(f'[jobs.quick-{i:02d}]\nevery = "1s"\nmode = "single_instance"\n'
                   'target = "python:chaos_handlers:quick"\n')
    for i in range(3):
        out.append(f'[jobs.slow-{i}]\nevery = "1s"\nmode = "single_instance"\n'
                   'target = "python:chaos_handlers:slow"\n')
    for i in range(2):
        out.append(f'[jobs.flaky-{i}]\nevery = "1s"\nmode = "single_instance"\n'
                   'target = "python:chaos_handlers:flaky"\nmax_attempts = 2\n'
                   'retry_backoff = "1s"\n')
    for i in range(2):
        out.append(f'[jobs.hang-{i}]\nevery = "3s"\nmode = "single_instance"\n'
                   f'shell = true\ncommand = {json.dumps(HANG)}\ntimeout = "2s"\n'
                   'kill_timeout = "1s"\nmax_attempts = 2\nretry_backoff = "1s"\n'
                   f'env = {{ CRONCTL_CHAOS_LOG = "{log}" }}\n')
    return "\n".join(out)


@dataclass
class Node:
    name: str
    config: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0


@dataclass
class Cluster:
    root: Path
    url: str
    nodes: dict[str, Node] = field(default_factory=dict)
    kills: list[tuple[str, int, float]] = field(default_factory=list)  # node, pid, time
    release_seconds: list[float] = field(default_factory=list)

    def env(self, node: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "CRONCTL_DATABASE_URL",
                            "CRONCTL_CONFIG")}
        env["PYTHONPATH"] = os.pathsep.join([str(self.root / "handlers"),
                                             env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["CRONCTL_CHAOS_LOG"] = str(self.root / "handlers.log")
        env["CRONCTL_CHAOS_NODE"] = node
        return env

    def start(self, name: str) -> None:
        node = self.nodes[name]
        node.starts += 1
        log = (self.root / f"{name}.{node.starts}.log").open("w")
        node.proc = subprocess.Popen(
            [sys.executable, "-m", "cronctl", "-c", str(node.config), "run"],
            stdout=subprocess.DEVNULL, stderr=log, env=self.env(name), cwd=self.root,
            start_new_session=True)
        log.close()

    def kill(self, name: str) -> None:
        node = self.nodes[name]
        assert node.proc is not None
        os.killpg(node.proc.pid, signal.SIGKILL)
        self.kills.append((name, node.proc.pid, time.time()))
        node.proc.wait(10)

    def stop_all(self) -> dict[str, int]:
        codes: dict[str, int] = {}
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGTERM)
        for name, node in self.nodes.items():
            if node.proc is not None:
                try:
                    codes[name] = node.proc.wait(40)
                except subprocess.TimeoutExpired:
                    os.killpg(node.proc.pid, signal.SIGKILL)
                    codes[name] = -9
        return codes


def _ready(cluster: Cluster, name: str, timeout: float = 30) -> bool:
    node = cluster.nodes[name]
    log = cluster.root / f"{name}.{node.starts}.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if " ready " in log.read_text(errors="replace"):
            return True
        time.sleep(0.1)
    return False


def _locks_released(store: Store, node: str, limit: float = 30) -> float | None:
    """Seconds from the kill until no guard lock of ``node`` is left; None when it held
    none (nothing to measure)."""
    began = time.monotonic()
    try:
        if not any(g.node_id == node for g in store.guard_locks()):
            return None
    except Exception:
        pass
    while time.monotonic() - began < limit:
        try:
            if not any(g.node_id == node for g in store.guard_locks()):
                return time.monotonic() - began
        except Exception:
            pass
        time.sleep(0.05)
    return float("inf")


def run_chaos(root: Path, url: str, server: PrivatePostgres | None) -> dict[str, Any]:
    (root / "jobs.d").mkdir(parents=True)
    (root / "handlers").mkdir()
    (root / "handlers" / "chaos_handlers.py").write_text(HANDLERS)
    (root / "jobs.d" / "chaos.toml").write_text(_jobs(root / "handlers.log"))
    cluster = Cluster(root, url)
    for name in NODES:
        config = root / f"{name}.toml"
        config.write_text(
            "[scheduler]\n"
            f'database = "{url}"\njobs_dir = "{root / "jobs.d"}"\nnode_id = "{name}"\n'
            'heartbeat_interval = "1s"\nshutdown_timeout = "5s"\nmax_concurrent_jobs = 40\n'
            'progress_flush_interval = "1s"\n')
        cluster.nodes[name] = Node(name, config)
    rng = random.Random(int(os.environ.get("CRONCTL_CHAOS_SEED", "7")))
    observer = open_store(url, node_id="chaos-observer")
    for name in NODES:
        cluster.start(name)
        assert _ready(cluster, name), (root / f"{name}.1.log").read_text()[-3000:]
    began = datetime.now(UTC)
    deadline = time.monotonic() + SECONDS
    restarted_pg = server is None
    try:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(*KILL_EVERY))
            if not restarted_pg and time.monotonic() > deadline - SECONDS / 2:
                server.restart()  # type: ignore[union-attr]
                restarted_pg = True
                continue
            victim = rng.choice(NODES)
            cluster.kill(victim)
            released = _locks_released(observer, victim)
            if released is not None:
                cluster.release_seconds.append(released)
            cluster.start(victim)
            assert _ready(cluster, victim), "a restarted node did not get ready"
        ended = datetime.now(UTC)
    finally:
        codes = cluster.stop_all()
    try:
        return audit(cluster, observer, began, ended, codes)
    finally:
        observer.close()


def _handler_attempts(root: Path, kills: list[tuple[str, int, float]]
                      ) -> dict[tuple[str, float], list[tuple[int, float, float]]]:
    """(job, planned epoch) -> [(attempt, start, end)]; an attempt whose end was never
    written ended when its process group was killed."""
    killed_at = {pid: at for _node, pid, at in kills}
    starts: dict[tuple[str, float, int, int], float] = {}
    ends: dict[tuple[str, float, int, int], float] = {}
    pid_of: dict[tuple[str, float, int, int], int] = {}
    log = root / "handlers.log"
    for line in (log.read_text().splitlines() if log.exists() else []):
        parts = line.split()
        if len(parts) < 7:
            continue
        kind, job, planned, attempt, _node, pid, at = parts[:7]
        key = (job, round(float(planned)), int(attempt), int(pid))
        (starts if kind == "S" else ends)[key] = float(at)
        pid_of[key] = int(pid)
    out: dict[tuple[str, float], list[tuple[int, float, float]]] = defaultdict(list)
    for key, start in starts.items():
        end = ends.get(key, killed_at.get(key[3], float("inf")))
        out[(key[0], key[1])].append((key[2], start, end))
    return out


def audit(cluster: Cluster, store: Store, began: datetime, ended: datetime,
          codes: dict[str, int]) -> dict[str, Any]:
    step = {job: timedelta(seconds=3 if job.startswith("hang") else 1)
            for job in _job_ids()}
    ours = set(step)  # the chaos jobs (an installed example service may add its own)
    rows = [r for r in store.list_executions(limit=None) if r.job_id in ours]
    skips = [s for s in store.list_skips(limit=None) if s.job_id in ours]
    by_job: dict[str, list[Any]] = defaultdict(list)
    for r in rows:
        by_job[r.job_id].append(r)
    skipped: dict[tuple[str, datetime], str] = {}
    skip_rows_per_instant: dict[tuple[str, datetime], int] = defaultdict(int)
    for s in skips:
        at = s.first_at
        for _ in range(s.count):
            skipped[(s.job_id, at)] = s.reason
            skip_rows_per_instant[(s.job_id, at)] += 1
            at += step.get(s.job_id, timedelta(seconds=1))
    planned = unaccounted = 0
    missing: list[str] = []
    window_start = began + timedelta(seconds=2)
    for job, delta in step.items():
        state = store.get_schedule(job)
        last = state.cursor if state and state.cursor else ended
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        t = epoch + ((window_start - epoch) // delta + 1) * delta
        ran = {r.scheduled_at for r in by_job[job]}
        while t <= min(last, ended):
            planned += 1
            if t not in ran and (job, t) not in skipped:
                unaccounted += 1
                missing.append(f"{job}@{t:%H:%M:%S}")
            t += delta
    attempt1 = defaultdict(int)
    successes = defaultdict(int)
    for r in rows:
        if r.attempt == 1:
            attempt1[(r.job_id, r.scheduled_at)] += 1
        if r.status is ExecutionStatus.SUCCEEDED:
            successes[(r.job_id, r.scheduled_at)] += 1
    duplicated = sum(1 for n in attempt1.values() if n > 1) + sum(
        1 for n in successes.values() if n > 1)
    concurrent = 0
    overlaps: list[str] = []
    for (job, planned_at), attempts in _handler_attempts(cluster.root, cluster.kills).items():
        attempts.sort(key=lambda a: a[1])
        for (a1, s1, e1), (a2, s2, e2) in zip(attempts, attempts[1:], strict=False):
            if a1 != a2 and s2 < e1 - 0.01:
                concurrent += 1
                overlaps.append(f"{job}@{planned_at:.0f} a{a1} {s1:.2f}-{e1:.2f} "
                                f"a{a2} {s2:.2f}-{e2:.2f}")
    # After the clean stop nothing may still be running. A retry written ahead as pending
    # (its backoff not over when the cluster stopped) is the durable retry queue: the
    # next start runs it, so it is counted, not failed.
    left_live = [r.id for r in rows if r.status is ExecutionStatus.RUNNING]
    waiting = [r.id for r in rows if r.status is ExecutionStatus.PENDING and r.attempt > 1]
    stray_pending = [r.id for r in rows if r.status is ExecutionStatus.PENDING
                     and r.attempt == 1]
    unstable = [r.id for r in rows if r.occurrence_id != occurrence_id(r.job_id,
                                                                       r.scheduled_at)]
    fencing_bad = 0
    for job_rows in by_job.values():
        tokens = [r.fencing_token for r in sorted(
            (r for r in job_rows if r.started_at and r.fencing_token is not None),
            key=lambda r: (r.started_at, r.fencing_token))]
        if len(set(tokens)) != len(tokens) or tokens != sorted(tokens):
            fencing_bad += 1
    reasons: dict[str, int] = defaultdict(int)
    for (_job, _at), reason in skipped.items():
        reasons[reason] += 1
    recovered = sum(1 for r in rows if r.attempt > 1 and r.error is None and
                    r.status is ExecutionStatus.SUCCEEDED)
    finite = [s for s in cluster.release_seconds if s != float("inf")]
    figures = {
        "seconds": SECONDS, "kills": len(cluster.kills), "planned": planned,
        "executed": len(rows), "skipped": dict(reasons), "unaccounted": unaccounted,
        "missing_sample": missing[:10], "duplicated": duplicated,
        "skip_rows_per_instant_max": max(skip_rows_per_instant.values(), default=0),
        "concurrent_attempts": concurrent, "overlap_sample": overlaps[:5],
        "left_running": len(left_live),
        "left_pending_first_attempts": len(stray_pending),
        "retries_waiting_after_stop": len(waiting),
        "unstable_occurrence_ids": len(unstable), "jobs_with_bad_fencing": fencing_bad,
        "recovered_attempts": recovered,
        "locks_released_p50_s": round(statistics.median(finite), 2) if finite else None,
        "locks_released_max_s": round(max(cluster.release_seconds), 2)
        if cluster.release_seconds else None,
        "longest_overlap_run": _longest_overlap_run(skips, step),
        "exit_codes": codes,
    }
    return figures


def _longest_overlap_run(skips: list[Any], step: dict[str, timedelta]) -> int:
    best = 0
    by_job: dict[str, list[datetime]] = defaultdict(list)
    for s in skips:
        if s.reason == "overlap":
            at = s.first_at
            for _ in range(s.count):
                by_job[s.job_id].append(at)
                at += step.get(s.job_id, timedelta(seconds=1))
    for job, instants in by_job.items():
        if job.startswith(("slow", "hang")):
            continue  # these overlap by design
        instants.sort()
        run = 1
        for a, b in zip(instants, instants[1:], strict=False):
            run = run + 1 if b - a == step[job] else 1
            best = max(best, run)
        best = max(best, 1 if instants else 0)
    return best


def _job_ids() -> list[str]:
    return ([f"quick-{i:02d}" for i in range(24)] + [f"slow-{i}" for i in range(3)]
            + [f"flaky-{i}" for i in range(2)] + [f"hang-{i}" for i in range(2)])


def _check(figures: dict[str, Any], root: Path, db: str) -> None:
    (root / f"chaos-{db}.json").write_text(json.dumps(figures, indent=2))
    print(f"\nchaos {db}: {json.dumps(figures)}")
    assert figures["unaccounted"] == 0, figures
    assert figures["duplicated"] == 0, figures
    assert figures["concurrent_attempts"] == 0, figures
    assert figures["left_running"] == 0, figures
    assert figures["left_pending_first_attempts"] == 0, figures
    assert figures["unstable_occurrence_ids"] == 0, figures
    assert figures["jobs_with_bad_fencing"] == 0, figures
    assert figures["skip_rows_per_instant_max"] <= 1, figures
    assert all(code == 0 for code in figures["exit_codes"].values()), figures


def test_chaos_sqlite(tmp_path: Path) -> None:
    figures = run_chaos(tmp_path, f"sqlite:///{tmp_path / 'state.db'}", None)
    _check(figures, tmp_path, "sqlite")


def test_chaos_postgresql(tmp_path: Path) -> None:
    try:
        server = PrivatePostgres(tmp_path / "pg")
    except RuntimeError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"PostgreSQL server binaries required in CI: {exc}")
        pytest.skip(str(exc))
    server.start()
    try:
        figures = run_chaos(tmp_path / "run", server.url, server)
    finally:
        server.stop()
    _check(figures, tmp_path / "run", "postgresql")
