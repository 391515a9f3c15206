"""A big state database for the read-command scenarios of :mod:`bench.bench_fire_path`
and :mod:`bench.bench_scale`: by default 1,000,000 executions (100 jobs, one every minute
for 10,000 minutes up to now) with 3 log lines each, 10,000 skip records, job schedules,
and the wall time of the real CLI process on it; other sizes through :class:`Size`.

The schema comes from the real migrations (``cronctl db upgrade``); the rows are written
straight in batches (``executemany`` on SQLite, ``COPY`` on PostgreSQL): about 20 s. The
SQLite file is cached under the temporary directory, keyed by the schema revision and
:data:`VERSION`, so reruns start at once; the PostgreSQL database is created and dropped.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._support import postgres_database, schema_key, tree_env

VERSION = 1  # bump when the generated data changes
JOBS = 100
PER_JOB = 10_000
LOG_LINES = 3
SKIPS = 10_000
NODE = "node-a"
RUNS = 5  # each command's wall: the median of this many runs
COMMAND_TIMEOUT = 60.0

JOB = "j0042"  # the job the per-job commands ask about


@dataclass(frozen=True)
class Size:
    """How big a data set is: ``jobs`` jobs, ``per_job`` executions each (one a minute),
    ``log_lines`` per execution."""

    jobs: int = JOBS
    per_job: int = PER_JOB
    log_lines: int = LOG_LINES

    @property
    def executions(self) -> int:
        return self.jobs * self.per_job

    @property
    def key(self) -> str:
        return f"{self.jobs}x{self.per_job}x{self.log_lines}"


DEFAULT = Size()


def new_base(size: Size = DEFAULT) -> datetime:
    """The first planned instant of a data set generated now (it ends at now)."""
    return (datetime.now(UTC).replace(second=0, microsecond=0)
            - timedelta(minutes=size.per_job))


def _at(base: datetime, minute: int) -> datetime:
    return base + timedelta(minutes=minute)


def _iso(t: datetime) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}Z"


def read_commands(base: datetime, size: Size = DEFAULT) -> dict[str, list[str]]:
    """The commands measured on a data set starting at ``base``. ``why`` asks about an
    instant that ran; the time window holds an hour (6,000 executions)."""
    middle = size.per_job // 2
    return {
        "history": ["history"],
        "history JOB": ["history", JOB],
        "history --status failed": ["history", "--status", "failed"],
        "history JOB --status failed": ["history", JOB, "--status", "failed"],
        # No row has this status: the whole table is looked at unless an index says so.
        "history --status cancelled": ["history", "--status", "cancelled"],
        "history --since --until": ["history", "--since", _iso(_at(base, middle)),
                                    "--until", _iso(_at(base, middle + 60))],
        "history --status skipped": ["history", "--status", "skipped"],
        "logs --job JOB": ["logs", "--job", JOB],
        "logs ID": ["logs", str(size.executions // 2)],
        "status": ["status"],
        "why JOB AT": ["why", JOB, _iso(_at(base, size.per_job * 7 // 10))],
    }


BASELINE = ["next", "0 0 8 * * *"]

_COLUMNS = ("id", "job_id", "occurrence_id", "scheduled_at", "attempt", "scope", "node_id",
            "origin", "status", "target", "fencing_token", "created_at", "started_at",
            "finished_at", "error", "cancel_requested")


def _occurrence(job_id: str, at: str) -> str:
    return hashlib.sha256(f"{job_id}\n{at}".encode()).hexdigest()[:32]


def execution_rows(base: datetime, size: Size = DEFAULT) -> Iterator[tuple[Any, ...]]:
    """Oldest first (ids grow with time, as a scheduler writes them); one in 100 failed,
    one in 1,000 dead_letter, the newest execution of the first 10 jobs running."""
    ident = 0
    for minute in range(size.per_job):
        at = _at(base, minute)
        planned = _iso(at)
        started = _iso(at + timedelta(milliseconds=3))
        finished = _iso(at + timedelta(milliseconds=250))
        for j in range(size.jobs):
            ident += 1
            job_id = f"j{j:04d}"
            status, error, end = "succeeded", None, finished
            if (minute + j) % 100 == 7:
                status, error = "failed", "RuntimeError: the upstream was not ready"
            elif (minute + j) % 1000 == 3:
                status, error = "dead_letter", "TimeoutError: gave up"
            if minute == size.per_job - 1 and j < 10:
                status, error, end = "running", None, None
            yield (ident, job_id, _occurrence(job_id, planned), planned, 1, NODE, NODE,
                   "cron", status, f"command:bench-{j}", None, planned, started, end, error,
                   False)


def log_rows(base: datetime, size: Size = DEFAULT) -> Iterator[tuple[Any, ...]]:
    lines = size.log_lines
    for ident in range(1, size.executions + 1):
        minute = (ident - 1) // size.jobs
        at = _iso(_at(base, minute) + timedelta(milliseconds=10))
        for seq in range(1, lines + 1):
            yield (ident, seq, at, "INFO", f"step {seq} of {lines}: processed {ident} rows")


def skip_rows(base: datetime, size: Size = DEFAULT) -> Iterator[tuple[Any, ...]]:
    for k in range(min(SKIPS, size.jobs * (size.per_job // 5))):
        job_id = f"j{k % size.jobs:04d}"
        # Half a minute after a planned instant: none collides with an execution's.
        first = _iso(_at(base, (k // size.jobs) * 5) + timedelta(seconds=30))
        yield (k + 1, job_id, NODE, first, first, 1, "overlap", NODE, first, None)


_SKIP_COLUMNS = ("id", "job_id", "scope", "first_at", "last_at", "count", "reason",
                 "node_id", "created_at", "detail")


def _schedule_rows(base: datetime, size: Size = DEFAULT) -> list[tuple[Any, ...]]:
    last = _iso(_at(base, size.per_job - 1))
    return [(f"j{j:04d}", "{}", last, False, 0, last) for j in range(size.jobs)]


def _write_config(folder: Path, database: str, size: Size = DEFAULT) -> None:
    (folder / "jobs.d").mkdir(exist_ok=True)
    (folder / "jobs.d" / "jobs.toml").write_text("".join(
        f'[jobs.j{j:04d}]\ncron = "0 * * * * *"\ncommand = ["true"]\n\n'
        for j in range(size.jobs)))
    (folder / "cronctl.toml").write_text(
        f'[scheduler]\ndatabase = "{database}"\njobs_dir = "jobs.d"\nnode_id = "{NODE}"\n')


def cli(folder: Path, args: list[str], timeout: float = COMMAND_TIMEOUT
        ) -> subprocess.CompletedProcess[bytes]:
    env = tree_env()
    return subprocess.run([sys.executable, "-m", "cronctl", "-c", "cronctl.toml", *args],
                          cwd=folder, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout, check=False)


def _upgrade(folder: Path) -> None:
    done = cli(folder, ["db", "upgrade"])
    if done.returncode != 0:
        raise RuntimeError(f"db upgrade failed: {done.stderr.decode().strip()[-300:]}")


@contextmanager
def big_sqlite(size: Size = DEFAULT) -> Iterator[tuple[Path, datetime]]:
    """The folder of a config whose SQLite database holds the big data set (cached), and
    the data set's first instant."""
    suffix = "" if size == DEFAULT else f"-{size.key}"
    folder = (Path(tempfile.gettempdir())
              / f"cronctl-bench-bigdb-{schema_key()}-v{VERSION}{suffix}")
    marker = folder / "complete"
    if not marker.exists():
        base = new_base(size)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        _write_config(folder, "sqlite:///state.db", size)
        _upgrade(folder)
        started = time.perf_counter()
        db = sqlite3.connect(folder / "state.db")
        with db:
            db.executemany(f"INSERT INTO job_executions ({', '.join(_COLUMNS)}) VALUES "
                           f"({', '.join('?' * len(_COLUMNS))})", execution_rows(base, size))
            db.executemany("INSERT INTO job_logs (execution_id, seq, at, level, message) "
                           "VALUES (?, ?, ?, ?, ?)", log_rows(base, size))
            db.executemany(f"INSERT INTO skip_records ({', '.join(_SKIP_COLUMNS)}) VALUES "
                           f"({', '.join('?' * len(_SKIP_COLUMNS))})", skip_rows(base, size))
            db.executemany("INSERT INTO job_schedules (job_id, definition, \"cursor\", paused, "
                           "fencing_token, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                           _schedule_rows(base, size))
        db.execute("ANALYZE")
        db.close()
        print(f"    (generated the SQLite data set in {time.perf_counter() - started:.0f} s)",
              flush=True)
        marker.write_text(base.isoformat())
    _write_config(folder, "sqlite:///state.db", size)
    yield folder, datetime.fromisoformat(marker.read_text())


@contextmanager
def big_postgres(size: Size = DEFAULT) -> Iterator[tuple[Path, datetime]]:
    """The folder of a config whose PostgreSQL database (fresh, dropped afterwards) holds
    the big data set."""
    import psycopg

    with postgres_database("cronctl_bench_reads") as url, \
            tempfile.TemporaryDirectory(prefix="cronctl-bench-pg-") as tmp:
        folder = Path(tmp)
        base = new_base(size)
        _write_config(folder, url, size)
        _upgrade(folder)
        started = time.perf_counter()
        dsn = url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(dsn) as conn, conn.cursor() as cur:
            for table, columns, rows in (
                    ("job_executions", _COLUMNS, execution_rows(base, size)),
                    ("job_logs", ("execution_id", "seq", "at", "level", "message"),
                     log_rows(base, size)),
                    ("skip_records", _SKIP_COLUMNS, skip_rows(base, size)),
                    ("job_schedules", ("job_id", "definition", "cursor", "paused",
                                       "fencing_token", "updated_at"),
                     _schedule_rows(base, size))):
                quoted = ", ".join(f'"{c}"' for c in columns)
                with cur.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            for table in ("job_executions", "skip_records"):
                cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                            f"(SELECT max(id) FROM {table}))")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        print(f"    (generated the PostgreSQL data set in "
              f"{time.perf_counter() - started:.0f} s)", flush=True)
        yield folder, base


def command_wall(folder: Path, commands: dict[str, list[str]]) -> dict[str, Any]:
    """Median wall (ms) of each command and of the baseline, over RUNS runs each,
    interleaved so that a busy moment of the machine hits all of them alike."""
    names = ["next", *commands]
    argv = {"next": BASELINE, **commands}
    walls: dict[str, list[float]] = {n: [] for n in names}
    errors: dict[str, str] = {}
    for name in names:  # one warm-up each (page cache, .pyc)
        done = cli(folder, argv[name])
        if done.returncode != 0:
            errors[name] = (done.stderr.decode(errors="replace").strip().splitlines()
                            or ["no output"])[-1]
    for _ in range(RUNS):
        for name in names:
            started = time.perf_counter()
            cli(folder, argv[name])
            walls[name].append((time.perf_counter() - started) * 1000)
    result: dict[str, Any] = {
        "next_ms": statistics.median(walls["next"]),
        "commands": {n: round(statistics.median(walls[n]), 1) for n in commands},
    }
    if errors:
        result["error"] = "; ".join(f"{n}: {e}" for n, e in errors.items())
    return result
