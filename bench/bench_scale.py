"""The scale envelope: ``python -m bench.bench_scale [distinct] [jobs] [reads] [cluster]
[trigger] [profile-validate]``.

**Distinct** (100,000 command jobs in 100 files, every expression different: each
second of the day at least once, with varied day, month and weekday fields; empty SQLite
database): the wall of ``validate``, ``list --json``, ``next JOB``, ``cronctl run`` up to
READY and its RSS 10 s later, each beside ``tomllib`` loading the same files in a process
of its own, measured in the same run. Goals: ``validate`` <= 5 s, ``list --json`` <= 4 s,
``next JOB`` <= 0.5 s, READY <= 5 s, RSS <= 250 MB. ``profile-validate`` (only when
named) prints where ``validate``'s time goes on that set (cProfile).

**Jobs** (10,000 and 100,000 command jobs with distinct expressions in 100 files,
SQLite): the per-job cost of loading and validating beyond ``tomllib`` (in a child
process, CPU time, best of two), and the wall time and peak memory of the real commands:
``validate``, ``next JOB``, ``why JOB``, ``trigger JOB``, ``list --json`` and ``list``
(once just after the files changed, then with the validated set kept), and ``cronctl
run`` up to READY (with its resident memory then and 5 s later). Goals at 100,000 jobs:
<= 25 us a job beyond tomllib, ``next``/``why``/``trigger`` <= 0.5 s, ``list`` <= 4 s,
READY <= 5 s and <= 250 MB.

**Trigger** (only when named: 100,000 jobs, ``cronctl run`` on SQLite, READY + 3 s):
the median wall of 9 ``cronctl trigger JOB`` processes (goal <= 0.5 s), how long each
request waited to be taken, and the scheduler's idle CPU before.

**Reads** (``history``, ``logs``, ``status``, ``why`` on 10,000, 1M and 10M executions,
SQLite and PostgreSQL, after ANALYZE): the median wall of each command and its growth
from the smallest to the largest data set (goal: within 1.3x). The sizes measured are
``CRONCTL_BENCH_READ_SIZES`` (default ``10k,1M,10M``) on ``CRONCTL_BENCH_READ_BACKENDS``
(default ``sqlite,postgresql``); the 10M data sets take minutes to generate (the SQLite
one is cached under the temporary directory).

**Cluster** (3 ``cronctl run`` nodes on one PostgreSQL database, 100,000 single_instance
probe jobs: 1,000 every second, the rest hourly on ``H``): each fire's lateness as its
handler saw it (p50/p99, goal p99 < 1 s), fires per second, the instants skipped per
second by reason, and the database's transactions and statements (``pg_stat_database``;
``pg_stat_statements`` when the server has it) per fire over the measured window, which
starts ``CRONCTL_BENCH_CLUSTER_SETTLE`` seconds (default 10) after the last node is READY.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._bigdb import Size, big_postgres, big_sqlite, command_wall, read_commands
from bench._support import NoPostgres, cpu_seconds, fmt, print_table, rss_mb, tree_env

JOB_COUNTS = (10_000, 100_000)
FILES = 100
READ_SIZES = {"10k": Size(100, 100), "1M": Size(100, 10_000), "10M": Size(100, 100_000, 1)}
READY_TIMEOUT = 120.0

_PER_JOB_SCRIPT = """
import gc, sys, time, tomllib
from datetime import UTC, datetime
from pathlib import Path
from cronctl.config import Config
from cronctl.jobs.loader import load_jobs
d = Path(sys.argv[1])
config = Config(path=None, base_dir=d.parent, database="none", jobs_dir=d, node_id="b")
best_toml = best_load = float("inf")
for _ in range(2):
    t = time.process_time()
    for p in sorted(d.glob("*.toml")):
        tomllib.loads(p.read_text())
    best_toml = min(best_toml, time.process_time() - t)
    t = time.process_time()
    jobs = len(load_jobs(config.job_settings, now=datetime.now(UTC)).jobs)
    best_load = min(best_load, time.process_time() - t)
    gc.collect()
print(best_toml, best_load, jobs)
"""


# Realistic day, month and weekday fields for the distinct set: mostly every day, some
# weekdays or weekends, some monthly or quarterly (each drawn with its weight). Every one
# validates without a warning: a restricted day-of-month AND day-of-week would warn, and
# `LW`, `L-n` and `NW` are refused today (the docs say they are allowed).
_DAYS = (("*", "*", "*", 60), ("*", "*", "1-5", 12), ("*", "*", "MON-FRI", 4),
         ("*", "*", "0,6", 4), ("*", "*", "SAT", 2), ("1", "*", "*", 4), ("1,15", "*", "*", 3),
         ("*/2", "*", "*", 2), ("L", "*", "*", 1), ("1", "*/3", "*", 2),
         ("*", "JAN-JUN", "*", 1), ("15", "MAR,SEP", "*", 1), ("*", "*", "5L", 1),
         ("*", "*", "1#2", 1), ("1,10,20", "*", "*", 1), ("*", "*", "2#1", 1))
_SEED = 18  # one seed: every run (and every tree measured) parses the same 100k strings


def distinct_expressions(count: int, seed: int = _SEED) -> list[str]:
    """``count`` different six-field expressions, the first 86,400 one for each second of
    the day (second, minute and hour fields), each with a day/month/weekday part drawn
    from :data:`_DAYS`; past 86,400 lists and steps of seconds or minutes, also
    different. No parse cache keyed on the text can serve two jobs of this set."""
    rng = random.Random(seed)
    days = [f"{dom} {month} {dow}" for dom, month, dow, _ in _DAYS]
    weights = [w for *_, w in _DAYS]
    seconds = list(range(86_400))
    rng.shuffle(seconds)  # each file holds seconds from all over the day
    out: list[str] = []
    seen: set[str] = set()
    for i in range(count):
        day = rng.choices(days, weights)[0]
        if i < len(seconds):
            sod = seconds[i]
            expr = f"{sod % 60} {sod // 60 % 60} {sod // 3600} {day}"
        else:
            while True:
                a, b = sorted(rng.sample(range(60), 2))
                sec = rng.choice((f"{a},{b}", f"{a}/{rng.randint(5, 30)}", f"{a}-{b}"))
                minute = rng.choice(("*", f"*/{rng.randint(2, 30)}", str(rng.randrange(60))))
                hour = rng.choice(("*", f"{rng.randrange(12)}-{rng.randrange(12, 24)}"))
                expr = f"{sec} {minute} {hour} {day}"
                if expr not in seen:
                    break
        seen.add(expr)
        out.append(expr)
    return out


def generate(folder: Path, count: int) -> None:
    """``count`` command jobs in :data:`FILES` files, each with an expression of its own
    (:func:`distinct_expressions`), and a SQLite config."""
    jobs_dir = folder / "jobs.d"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    exprs = distinct_expressions(count)
    per_file = count // FILES
    for f in range(FILES):
        tables = []
        for j in range(per_file):
            i = f * per_file + j
            tables.append(f'[jobs.job-{i:06d}]\ncron = "{exprs[i]}"\n'
                          f'command = ["/bin/true", "{i}"]\n')
        (jobs_dir / f"f{f:03d}.toml").write_text("\n".join(tables))
    (folder / "cronctl.toml").write_text(
        '[scheduler]\ndatabase = "sqlite:///state.db"\njobs_dir = "jobs.d"\n'
        'node_id = "bench"\n')


def _cli(folder: Path, *args: str) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB, exit code) of one ``cronctl`` process."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cronctl", "-c", "cronctl.toml", *args],
                            cwd=folder, env=tree_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, proc.returncode


def _median_cli(folder: Path, args: list[str], runs: int) -> dict[str, float]:
    samples = sorted((_cli(folder, *args) for _ in range(runs)), key=lambda s: s[0])
    wall, peak, code = samples[len(samples) // 2]
    return {"wall_s": wall, "peak_mb": peak, "exit": code}


@contextmanager
def _running(folder: Path) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """``cronctl run`` in ``folder``, and the seconds from its start to its READY log
    line (NaN if it never came); stopped on leaving."""
    log = folder / "run.log"
    started = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cronctl", "-c", "cronctl.toml", "run"],
                                cwd=folder, env=tree_env(), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ready = float("nan")
        while time.perf_counter() - started < READY_TIMEOUT and proc.poll() is None:
            if b" ready " in log.read_bytes():
                ready = time.perf_counter() - started
                break
            time.sleep(0.05)
        yield proc, ready
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have ended by itself
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _ready(folder: Path, job: str) -> dict[str, Any]:
    """Seconds from start to the READY log line of ``cronctl run``, RSS then and 5 s on,
    and ``trigger JOB`` (it needs a live scheduler) while it runs."""
    started = time.perf_counter()
    with _running(folder) as (proc, ready):
        rss_ready = rss_mb(proc.pid)[0]
        trigger = _median_cli(folder, ["trigger", job], 3)
        time.sleep(max(0.0, ready + 5 - (time.perf_counter() - started)))
        rss_later, peak = rss_mb(proc.pid)
    return {"ready_s": ready, "rss_ready_mb": rss_ready, "rss_5s_mb": rss_later,
            "peak_mb": peak, "trigger JOB": trigger}


TRIGGER_JOBS = 100_000
TRIGGER_RUNS = 9
IDLE_WINDOW = 20.0  # seconds of the scheduler's CPU measured before the triggers


def bench_trigger(count: int = TRIGGER_JOBS, runs: int = TRIGGER_RUNS) -> dict[str, Any]:
    """``trigger JOB`` end to end on ``count`` jobs with ``cronctl run`` on SQLite, READY +
    3 s: the wall of each real ``cronctl trigger`` process, how long the request waited
    to be taken (``taken_at - requested_at``, from the database), and the scheduler's
    idle CPU over :data:`IDLE_WINDOW` before."""
    import sqlite3

    with tempfile.TemporaryDirectory(prefix="cronctl-bench-trigger-") as tmp:
        folder = Path(tmp)
        generate(folder, count)
        if _cli(folder, "db", "upgrade")[2] != 0:
            raise SystemExit("cronctl db upgrade failed")
        job = f"job-{count // 2:06d}"
        with _running(folder) as (proc, ready):
            time.sleep(3)
            cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
            time.sleep(IDLE_WINDOW)
            idle = (cpu_seconds(proc.pid) - cpu0) / (time.perf_counter() - t0) * 100
            walls = []
            pauses = random.Random(20)  # the same pauses for every tree measured
            for _ in range(runs):
                # A random pause first: back to back, each request would reach the
                # scheduler at the same point of its 0.5 s poll, always lucky or not.
                time.sleep(pauses.uniform(0, 0.5))
                wall, _, code = _cli(folder, "trigger", job)
                if code:
                    raise SystemExit(f"cronctl trigger exited {code}")
                walls.append(wall)
        db = sqlite3.connect(folder / "state.db")
        taken = [(datetime.fromisoformat(t) - datetime.fromisoformat(r)).total_seconds()
                 for r, t in db.execute("SELECT requested_at, taken_at FROM trigger_requests "
                                        "ORDER BY id")]
        db.close()
    return {"jobs": count, "ready_s": ready, "idle_cpu_pct": idle, "walls": walls,
            "taken": taken}


def report_trigger(result: dict[str, Any]) -> None:
    walls, taken = result["walls"], result["taken"]
    print(f"trigger JOB: {result['jobs']:,} jobs, SQLite, cronctl run READY in "
          f"{result['ready_s']:.1f} s, {len(walls)} runs")
    print_table(["figure", "median", "min", "max", "goal"], [
        ["wall of `cronctl trigger JOB` (s)", f"{statistics.median(walls):.3f}",
         f"{min(walls):.3f}", f"{max(walls):.3f}", "<= 0.5"],
        ["request taken after (s, from the database)", f"{statistics.median(taken):.3f}",
         f"{min(taken):.3f}", f"{max(taken):.3f}", ""],
        ["scheduler idle CPU before (%)", f"{result['idle_cpu_pct']:.2f}", "", "", ""],
    ])
    print("  walls: " + " ".join(f"{w:.3f}" for w in walls))


def bench_jobs(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cronctl-bench-scale-") as tmp:
        folder = Path(tmp)
        generate(folder, count)
        out = subprocess.run([sys.executable, "-c", _PER_JOB_SCRIPT, str(folder / "jobs.d")],
                             env=tree_env(), capture_output=True, text=True, check=True)
        toml_s, load_s, jobs = out.stdout.split()
        result: dict[str, Any] = {
            "jobs": int(jobs), "tomllib_s": float(toml_s), "load_s": float(load_s),
            "beyond_us": (float(load_s) - float(toml_s)) / int(jobs) * 1e6}
        if _cli(folder, "db", "upgrade")[2] != 0:
            raise SystemExit("cronctl db upgrade failed")
        job = f"job-{count // 2:06d}"
        for name, args, runs in (("validate", ["validate"], 3),
                                 ("next JOB", ["next", job], 5),
                                 ("why JOB", ["why", job, "1h"], 5)):
            result[name] = _median_cli(folder, args, runs)
        # `list` keeps the validated set (cronctl.jobs.setcache): once after the files
        # changed (a miss; the set is written by a child it does not wait for), then
        # again with the set kept.
        for name, args in (("list --json", ["list", "--json"]), ("list", ["list"])):
            (folder / "jobs.d" / "f000.toml").touch()
            result[f"{name} (files changed)"] = _median_cli(folder, args, 1)
            time.sleep(5)
            result[name] = _median_cli(folder, args, 3)
        result["run"] = _ready(folder, job)
        result["trigger JOB"] = result["run"].pop("trigger JOB")
    return result


def report_jobs(results: dict[int, dict[str, Any]]) -> None:
    small, big = (results[c] for c in JOB_COUNTS)
    rows = [["us a job beyond tomllib (CPU)", fmt(small["beyond_us"], digits=1),
             fmt(big["beyond_us"], digits=1), "", "<= 25"],
            ["tomllib alone (CPU s)", fmt(small["tomllib_s"], digits=2),
             fmt(big["tomllib_s"], digits=2), "", ""]]
    goals = {"next JOB": "<= 0.5 s", "why JOB": "<= 0.5 s", "trigger JOB": "<= 0.5 s",
             "list --json": "<= 4 s", "list": "<= 4 s"}
    for name in ("validate", "next JOB", "why JOB", "trigger JOB", "list --json (files changed)",
                 "list --json", "list (files changed)", "list"):
        a, b = small[name], big[name]
        bad = f" (exit {b['exit']})" if b["exit"] else ""
        rows.append([f"{name}: wall s / peak MB",
                     f"{a['wall_s']:.2f} / {a['peak_mb']:.0f}",
                     f"{b['wall_s']:.2f} / {b['peak_mb']:.0f}{bad}",
                     f"{b['wall_s'] / a['wall_s']:.1f}x", goals.get(name, "")])
    a, b = small["run"], big["run"]
    rows.append(["run: READY s", fmt(a["ready_s"], digits=2), fmt(b["ready_s"], digits=2),
                 f"{b['ready_s'] / a['ready_s']:.1f}x", "<= 5 s"])
    rows.append(["run: RSS at READY / +5 s MB",
                 f"{a['rss_ready_mb']:.0f} / {a['rss_5s_mb']:.0f}",
                 f"{b['rss_ready_mb']:.0f} / {b['rss_5s_mb']:.0f}", "", "<= 250 MB"])
    print_table(["jobs (SQLite)", f"{JOB_COUNTS[0]:,}", f"{JOB_COUNTS[1]:,}", "growth",
                 "goal"], rows)


def bench_reads() -> None:
    wanted = [s.strip() for s in os.environ.get("CRONCTL_BENCH_READ_SIZES",
                                                ",".join(READ_SIZES)).split(",") if s.strip()]
    backends = os.environ.get("CRONCTL_BENCH_READ_BACKENDS", "sqlite,postgresql").lower()
    for backend, open_db in (("SQLite", big_sqlite), ("PostgreSQL", big_postgres)):
        if backend.lower() not in backends:
            continue
        walls: dict[str, dict[str, Any]] = {}
        for label in wanted:
            size = READ_SIZES[label]
            try:
                with open_db(size) as (folder, base):
                    walls[label] = command_wall(folder, read_commands(base, size))
            except NoPostgres as exc:
                print(f"  {backend}: skipped ({exc})")
                break
            print(f"  ({backend} {label}: done)", flush=True)
        if len(walls) < 2:
            continue
        first, last = wanted[0], wanted[len(walls) - 1]
        commands = walls[first]["commands"]
        rows = []
        for name in commands:
            cells = [fmt(walls[label]["commands"][name], " ms") for label in walls]
            growth = walls[last]["commands"][name] / walls[first]["commands"][name]
            # Each size's walls are measured in turn with `next` beside them: the same
            # ratio to `next` on both sizes is no growth, however busy the machine was.
            relative = growth / (walls[last]["next_ms"] / walls[first]["next_ms"])
            rows.append([name, *cells, f"{growth:.2f}x", f"{relative:.2f}x"])
        rows.append(["(next EXPR, for scale)",
                     *[fmt(walls[label]["next_ms"], " ms") for label in walls], "", ""])
        print(f"reads on {backend}, executions (goal: {last} within 1.3x of {first})")
        print_table(["command", *walls, f"{last}/{first}", "same, per next"], rows)
        for label, result in walls.items():
            if "error" in result:
                print(f"  {label}: errors: {result['error']}")


CLUSTER_NODES = 3
CLUSTER_JOBS = 100_000
CLUSTER_EVERY_SECOND = 1_000
CLUSTER_WINDOW = 30.0  # seconds measured, after every node is READY and CLUSTER_SETTLE s
CLUSTER_SETTLE = float(os.environ.get("CRONCTL_BENCH_CLUSTER_SETTLE", "10"))


def _db_counters(dsn: str) -> tuple[int, dict[str, int] | None]:
    """(committed + rolled back transactions, the calls of each statement if
    pg_stat_statements is there)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                           "WHERE datname = current_database()").fetchone()
        statements: dict[str, int] | None = None
        try:
            found = conn.execute(
                "SELECT query, sum(calls) FROM pg_stat_statements WHERE dbid = (SELECT oid "
                "FROM pg_database WHERE datname = current_database()) GROUP BY query"
            ).fetchall()
            statements = {str(q): int(n) for q, n in found}
        except psycopg.Error:
            statements = None
    return int(row[0]) if row else 0, statements


def bench_cluster() -> dict[str, Any]:
    """3 nodes, 100,000 jobs on PostgreSQL: lateness and database work per fire."""
    from bench._pgserver import private_server
    from bench._support import postgres_database

    with contextlib.ExitStack() as stack:
        # A server of its own when it can (pg_stat_statements counts the statements; it
        # loads only at a server's start), else a database on the shared server.
        url = stack.enter_context(private_server(
            "shared_preload_libraries=pg_stat_statements", "max_connections=200",
            database="cronctl_bench_cluster"))
        if url is None:
            url = stack.enter_context(postgres_database("cronctl_bench_cluster"))
        else:
            import psycopg

            with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="cronctl-bench-cluster-"))
        return _cluster_on(url, Path(tmp))


def _cluster_on(url: str, root: Path) -> dict[str, Any]:
    """The cluster run on the database at ``url``, its files under ``root``."""
    from bench._support import percentiles
    from bench.bench_fire_path import CRONCTL_READY, TARGET, _spawn

    tables = []
    for i in range(CLUSTER_JOBS):
        cron = "* * * * * *" if i < CLUSTER_EVERY_SECOND else "H H * * * *"
        tables.append(f'[jobs.c{i:06d}]\ncron = "{cron}"\ntarget = "{TARGET}"\n'
                      'mode = "single_instance"\nmax_attempts = 1\n')
    nodes = []
    for n in range(CLUSTER_NODES):
        folder = root / f"node{n}"
        (folder / "jobs.d").mkdir(parents=True)
        (folder / "jobs.d" / "cluster.toml").write_text("\n".join(tables))
        (folder / "cronctl.toml").write_text(
            f'[scheduler]\ndatabase = "{url}"\njobs_dir = "jobs.d"\n'
            f'node_id = "node-{n}"\nshutdown_timeout = "5s"\n')
        nodes.append(folder)
    if _cli(nodes[0], "db", "upgrade")[2] != 0:
        raise SystemExit("cronctl db upgrade failed")
    children = [_spawn([sys.executable, "-m", "cronctl", "-c", "cronctl.toml", "run"],
                       folder) for folder in nodes]
    try:
        ready = max(child.ready(CRONCTL_READY, timeout=300) for child in children)
        dsn = url.replace("postgresql+psycopg://", "postgresql://", 1)
        time.sleep(max(0.0, ready + CLUSTER_SETTLE - time.time()))
        start, (tx0, st0) = time.time(), _db_counters(dsn)
        time.sleep(CLUSTER_WINDOW)
        end, (tx1, st1) = time.time(), _db_counters(dsn)
        rss = [rss_mb(child.popen.pid)[0] for child in children]
        skipped = _skips_between(dsn, start, end)
    finally:
        samples = []
        for child in children:
            try:
                samples.extend(child.stop())
            except RuntimeError as exc:
                print(f"  node: {exc}")
                child.kill()
    window = [(p, s) for p, s in samples if start <= p < end]
    fires = len(window)
    calls = ({q: n - st0.get(q, 0) for q, n in st1.items() if n > st0.get(q, 0)}
             if st0 is not None and st1 is not None else {})
    result: dict[str, Any] = percentiles([s - p for p, s in window])
    result.update(fires_per_s=fires / CLUSTER_WINDOW,
                  expected_per_s=float(CLUSTER_EVERY_SECOND),
                  transactions_per_fire=(tx1 - tx0) / fires if fires else float("nan"),
                  statements_per_fire=(sum(calls.values()) / fires if fires and calls
                                       else float("nan")),
                  top_statements=[(q, n / fires) for q, n in sorted(
                      calls.items(), key=lambda kv: -kv[1])[:8]] if fires and calls else [],
                  rss_mb=max(rss), skipped_per_s={
                      reason: count / CLUSTER_WINDOW for reason, count in skipped.items()})
    return result


def _skips_between(dsn: str, start: float, end: float) -> dict[str, int]:
    """Instants planned in [start, end) that got a skip record, by reason."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT reason, sum(count) FROM skip_records WHERE first_at >= to_timestamp(%s) "
            "AND last_at < to_timestamp(%s) GROUP BY reason", (start, end)).fetchall()
    return {str(reason): int(count) for reason, count in rows}


def report_cluster(result: dict[str, Any]) -> None:
    print(f"cluster: {CLUSTER_NODES} nodes, PostgreSQL, {CLUSTER_JOBS:,} single_instance jobs "
          f"({CLUSTER_EVERY_SECOND:,} every second, the rest hourly on H), "
          f"{CLUSTER_WINDOW:g} s measured")
    print_table(["figure", "value", "goal"], [
        ["fires a second (expected)", f"{result['fires_per_s']:,.0f} "
                                      f"({result['expected_per_s']:,.0f})", ""],
        ["lateness p50", fmt(result["p50_ms"], " ms", 1), ""],
        ["lateness p99", fmt(result["p99_ms"], " ms", 1), "< 1,000 ms"],
        ["database transactions a fire", fmt(result["transactions_per_fire"], digits=2), ""],
        ["statements a fire (pg_stat_statements)",
         fmt(result["statements_per_fire"], digits=2), ""],
        ["largest node RSS", fmt(result["rss_mb"], " MB"), ""],
        ["instants skipped a second", ", ".join(
            f"{reason} {n:,.0f}" for reason, n in sorted(result["skipped_per_s"].items()))
            or "0", ""],
    ])
    for query, per_fire in result.get("top_statements", []):
        print(f"  {per_fire:6.2f} a fire: {' '.join(query.split())[:110]}")


DISTINCT_JOBS = 100_000
DISTINCT_SETTLE = 10.0  # RSS of `cronctl run` this long after READY

_TOMLLIB_SCRIPT = """
import sys, time, tomllib
from pathlib import Path
paths = sorted(Path(sys.argv[1]).glob("*.toml"))
t, c = time.perf_counter(), time.process_time()
for p in paths:
    with p.open("rb") as f:
        tomllib.load(f)
print(time.perf_counter() - t, time.process_time() - c)
"""


def _tomllib_floor(jobs_dir: Path, runs: int = 3) -> dict[str, float]:
    """``tomllib.load`` over every file of ``jobs_dir`` in a child process of its own
    (median of ``runs``): the wall of the loads alone, and of the whole process (what a
    ``cronctl`` process wall compares with: both start an interpreter)."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _TOMLLIB_SCRIPT, str(jobs_dir)],
                             env=tree_env(), capture_output=True, text=True, check=True)
        process = time.perf_counter() - started
        wall, cpu = (float(v) for v in out.stdout.split())
        samples.append((wall, cpu, process))
    wall, cpu, process = sorted(samples)[len(samples) // 2]
    return {"load_s": wall, "cpu_s": cpu, "process_s": process}


def bench_distinct(count: int = DISTINCT_JOBS) -> dict[str, Any]:
    """``count`` jobs in :data:`FILES` files, every expression different
    (:func:`distinct_expressions`), on an empty SQLite database: ``validate``,
    ``list --json`` (just after the files changed, then with the validated set kept),
    ``next JOB``, ``cronctl run`` to READY and its RSS :data:`DISTINCT_SETTLE` s later,
    each beside ``tomllib`` loading the same files (measured in between, in the same
    run, so that a busy machine slows both)."""
    with tempfile.TemporaryDirectory(prefix="cronctl-bench-distinct-") as tmp:
        folder = Path(tmp)
        generate(folder, count)
        jobs_dir = folder / "jobs.d"
        result: dict[str, Any] = {"jobs": count, "files": FILES,
                                  "distinct": len(set(distinct_expressions(count)))}
        if _cli(folder, "db", "upgrade")[2] != 0:
            raise SystemExit("cronctl db upgrade failed")
        result["tomllib (before)"] = _tomllib_floor(jobs_dir)
        job = f"job-{count // 2:06d}"
        result["validate"] = _median_cli(folder, ["validate"], 3)
        if result["validate"]["exit"]:
            raise SystemExit(f"cronctl validate exited {result['validate']['exit']} on the "
                             "distinct set: the generator wrote a job it refuses")
        print(f"  (distinct: validate {result['validate']['wall_s']:.2f} s)", flush=True)
        (jobs_dir / "f000.toml").touch()
        result["list --json (files changed)"] = _median_cli(folder, ["list", "--json"], 1)
        time.sleep(5)  # the kept set is written by a child the command does not wait for
        result["list --json"] = _median_cli(folder, ["list", "--json"], 3)
        result["next JOB"] = _median_cli(folder, ["next", job], 5)
        print(f"  (distinct: list --json {result['list --json']['wall_s']:.2f} s, next JOB "
              f"{result['next JOB']['wall_s']:.2f} s)", flush=True)
        started = time.perf_counter()
        with _running(folder) as (proc, ready):
            rss_ready = rss_mb(proc.pid)[0]
            time.sleep(max(0.0, ready + DISTINCT_SETTLE - (time.perf_counter() - started)))
            rss_later, peak = rss_mb(proc.pid)
            if proc.poll() is not None:
                tail = (folder / "run.log").read_text(errors="replace")[-1000:]
                raise SystemExit(f"cronctl run exited {proc.returncode}:\n{tail}")
        result["run"] = {"ready_s": ready, "rss_ready_mb": rss_ready,
                         "rss_settled_mb": rss_later, "peak_mb": peak}
        result["tomllib (after)"] = _tomllib_floor(jobs_dir)
    return result


def report_distinct(result: dict[str, Any]) -> None:
    floor = min(result["tomllib (before)"]["load_s"], result["tomllib (after)"]["load_s"])
    floor_p = min(result["tomllib (before)"]["process_s"],
                  result["tomllib (after)"]["process_s"])
    print(f"distinct: {result['jobs']:,} command jobs in {result['files']} files, "
          f"{result['distinct']:,} different expressions, empty SQLite database")
    print(f"  tomllib.load of the same files (own process, median of 3, before / after): "
          f"{result['tomllib (before)']['load_s']:.2f} / "
          f"{result['tomllib (after)']['load_s']:.2f} s of loads, "
          f"{result['tomllib (before)']['process_s']:.2f} / "
          f"{result['tomllib (after)']['process_s']:.2f} s a process")
    rows = []
    for name, goal in (("validate", 5.0), ("list --json (files changed)", 4.0),
                       ("list --json", 4.0), ("next JOB", 0.5)):
        r = result[name]
        bad = f" (exit {r['exit']})" if r["exit"] else ""
        rows.append([name, f"{r['wall_s']:.2f} s{bad}", f"{r['peak_mb']:.0f} MB",
                     f"{floor_p:.2f} s", f"{r['wall_s'] / floor_p:.1f}x",
                     f"<= {goal:g} s", "met" if r["wall_s"] <= goal and not r["exit"]
                     else "NOT met"])
    run = result["run"]
    rows.append(["run: READY", fmt(run["ready_s"], " s", 2), f"{run['rss_ready_mb']:.0f} MB",
                 f"{floor_p:.2f} s", fmt(run["ready_s"] / floor_p, "x", 1), "<= 5 s",
                 "met" if run["ready_s"] <= 5 else "NOT met"])
    rows.append([f"run: RSS {DISTINCT_SETTLE:g} s after READY",
                 fmt(run["rss_settled_mb"], " MB"), f"peak {run['peak_mb']:.0f} MB", "", "",
                 "<= 250 MB", "met" if run["rss_settled_mb"] <= 250 else "NOT met"])
    print_table(["command", "wall", "memory", "tomllib process", "ratio", "goal", ""], rows)
    print(f"  (tomllib's loads alone: {floor:.2f} s; its process adds the interpreter's "
          "start)")


def profile_validate(count: int = DISTINCT_JOBS, top: int = 25) -> None:
    """``cronctl validate`` on the distinct set under cProfile: where its time goes (the
    top functions by own time, then by cumulative time)."""
    with tempfile.TemporaryDirectory(prefix="cronctl-bench-distinct-") as tmp:
        folder = Path(tmp)
        generate(folder, count)
        stats = folder / "validate.prof"
        subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "cronctl",
                        "-c", "cronctl.toml", "validate"], cwd=folder, env=tree_env(),
                       stdout=subprocess.DEVNULL, check=False)
        import pstats

        for order in ("tottime", "cumulative"):
            print(f"cronctl validate, {count:,} distinct jobs: top {top} by {order}")
            pstats.Stats(str(stats)).sort_stats(order).print_stats(top)


def main(parts: list[str] | None = None) -> None:
    parts = parts or ["distinct", "jobs", "reads", "cluster"]
    if "distinct" in parts:
        report_distinct(bench_distinct())
    if "profile-validate" in parts:  # not in the default set
        profile_validate()
    if "trigger" in parts:  # not in the default set: the jobs part times trigger too
        report_trigger(bench_trigger())
    if "jobs" in parts:
        results = {count: bench_jobs(count) for count in JOB_COUNTS}
        report_jobs(results)
    if "reads" in parts:
        bench_reads()
    if "cluster" in parts:
        try:
            report_cluster(bench_cluster())
        except NoPostgres as exc:
            print(f"cluster: skipped ({exc})")


if __name__ == "__main__":
    main(sys.argv[1:])
