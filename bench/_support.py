"""Helpers the scheduler benchmarks share: memory and CPU from /proc, percentiles, a
throw-away PostgreSQL database, number formatting and the printed table."""

from __future__ import annotations

import os
import statistics
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

POSTGRES_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
ROOT = Path(__file__).resolve().parent.parent  # the repository: children import bench.*
# The cronctl the children run: this checkout, or another one (e.g. an export of an older
# commit, for before/after numbers from one bench): ``CRONCTL_BENCH_TREE=/path``.
TREE = Path(os.environ.get("CRONCTL_BENCH_TREE") or ROOT).resolve()


def tree_env(*first: Path) -> dict[str, str]:
    """The environment of a child running TREE's cronctl (``first`` ahead of it on the
    path; nothing else: the caller's PYTHONPATH may name another checkout)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (*first, TREE))
    for name in ("CRONCTL_DATABASE_URL", "CRONCTL_CONFIG"):
        env.pop(name, None)
    return env


def schema_key() -> str:
    """The newest migration script of TREE (what a database it creates is at)."""
    scripts = sorted(p.stem for p in (TREE / "migrations" / "versions").glob("[0-9]*.py"))
    return scripts[-1] if scripts else "none"


def rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(current RSS, peak RSS) of process ``pid`` in MB, from /proc."""
    values: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    except OSError:
        return (float("nan"), float("nan"))
    return values.get("VmRSS", float("nan")), values.get("VmHWM", float("nan"))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process ``pid`` used so far (all its threads)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    # After the command name: state is field 3, utime 14 and stime 15 (1-based).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """p50/p99/max of ``samples`` (seconds) in milliseconds."""
    if len(samples) < 2:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "samples": len(samples)}
    qs = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": qs[49] * 1000, "p99_ms": qs[98] * 1000, "max_ms": max(samples) * 1000,
            "samples": len(samples)}


def postgres_server() -> str:
    return os.environ.get("CRONCTL_TEST_POSTGRES_URL") or POSTGRES_DEFAULT


class NoPostgres(Exception):
    """The PostgreSQL server cannot be reached: the scenario is skipped."""


@contextmanager
def postgres_database(prefix: str = "cronctl_bench") -> Iterator[str]:
    """A fresh database on the test server (its SQLAlchemy URL), dropped afterwards."""
    import psycopg

    server = postgres_server()
    admin = server.replace("postgresql+psycopg://", "postgresql://", 1)
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise NoPostgres(f"PostgreSQL not available: {str(exc).splitlines()[0]}") from None
    try:
        yield f"{server.rpartition('/')[0]}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fmt(value: Any, unit: str = "", digits: int = 0) -> str:
    if not isinstance(value, int | float) or value != value:  # None, text or NaN
        return "-"
    return f"{value:,.{digits}f}{unit}"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    table = [list(headers), *(list(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(headers))]
    for line in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())


def brief(result: dict[str, Any]) -> str:
    """One line of a scenario's raw numbers."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in result.items() if not k.startswith("_"))
