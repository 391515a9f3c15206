"""Store throughput: single_instance elections and tracked execution lifecycles per second,
on SQLite and PostgreSQL, with one connection and with four (threads, each its own Store,
hence its own engine and connections).

- election: one ``INSERT ... ON CONFLICT DO NOTHING`` attempt. With four threads every
  occurrence is contested by all four (exactly one wins; checked).
- lifecycle: insert ``pending`` → ``running`` → ``succeeded`` (three write transactions).

PostgreSQL: ``$CRONCTL_TEST_POSTGRES_URL`` or the local default; a scratch database is
created and dropped. Skipped with the reason printed when the server is unreachable.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id, open_store

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
ELECTIONS = 400  # occurrences contested per run
LIFECYCLES = 200  # per thread
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _timed(stores: list[Store], work: Callable[[Store, int], int]) -> float:
    """Run ``work(store_i, i)`` in one thread per store; return operations per second."""
    barrier = threading.Barrier(len(stores) + 1)
    counts = [0] * len(stores)

    def run(i: int) -> None:
        barrier.wait()
        counts[i] = work(stores[i], i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def elections(url: str, connections: int, run: int) -> float:
    stores = [open_store(url, node_id=f"n{i}") for i in range(connections)]
    job = f"elect-{run}-{connections}"
    wins = [0] * connections

    def work(store: Store, i: int) -> int:
        for k in range(ELECTIONS):
            at = T0 + timedelta(seconds=k)
            won = store.try_insert_execution(
                job_id=job,
                occurrence_id=occurrence_id(job, at),
                scheduled_at=at,
                attempt=1,
                origin=Origin.CRON,
                node_id=f"n{i}",
                scope_node=None,
                now=at,
            )
            wins[i] += won is not None
        return ELECTIONS

    try:
        rate = _timed(stores, work)
    finally:
        for s in stores:
            s.close()
    assert sum(wins) == ELECTIONS, f"{sum(wins)} winners for {ELECTIONS} occurrences"
    return rate


def lifecycles(url: str, connections: int, run: int) -> float:
    stores = [open_store(url, node_id=f"n{i}") for i in range(connections)]
    S = ExecutionStatus

    def work(store: Store, i: int) -> int:
        job = f"life-{run}-{connections}-{i}"
        for k in range(LIFECYCLES):
            at = T0 + timedelta(seconds=k)
            eid = store.try_insert_execution(
                job_id=job,
                occurrence_id=occurrence_id(job, at),
                scheduled_at=at,
                attempt=1,
                origin=Origin.CRON,
                node_id=f"n{i}",
                scope_node=None,
                now=at,
            )
            assert eid is not None
            assert store.transition(eid, S.PENDING, S.RUNNING, started_at=at)
            assert store.transition(eid, S.RUNNING, S.SUCCEEDED, finished_at=at)
        return LIFECYCLES

    try:
        return _timed(stores, work)
    finally:
        for s in stores:
            s.close()


@contextmanager
def _sqlite() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        open_store(url, node_id="setup").close()
        yield url


@contextmanager
def _postgres(server: str) -> Iterator[str]:
    import psycopg

    admin = server.replace("postgresql+psycopg://", "postgresql://", 1)
    name = f"cronctl_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = server.rpartition("/")[0]
    try:
        url = f"{base}/{name}"
        open_store(url, node_id="setup").close()
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _postgres_reason(server: str) -> str | None:
    try:
        import psycopg

        admin = server.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(admin, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure means: skip, and say why
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def main() -> None:
    server = os.environ.get("CRONCTL_TEST_POSTGRES_URL") or DEFAULT_PG
    backends: list[tuple[str, Callable[[], AbstractContextManager[str]]]] = [("sqlite", _sqlite)]
    reason = _postgres_reason(server)
    if reason is None:
        backends.append(("postgresql", lambda: _postgres(server)))
    columns: list[str] = []
    rows: dict[str, list[float]] = {"elections/s": [], "lifecycles/s": []}
    for name, opener in backends:
        with opener() as url:
            for run, connections in enumerate((1, 4)):
                columns.append(f"{name} x{connections}")
                rows["elections/s"].append(elections(url, connections, run))
                rows["lifecycles/s"].append(lifecycles(url, connections, run))
    print(
        f"store: {ELECTIONS} contested occurrences per election run, "
        f"{LIFECYCLES} lifecycles per connection (x1 = one connection, x4 = four threads)"
    )
    print(f"{'':14}" + "".join(f"{c:>16}" for c in columns))
    for label, values in rows.items():
        print(f"{label:14}" + "".join(f"{v:>16,.0f}" for v in values))
    if reason is not None:
        print(f"postgresql skipped: {reason}")


if __name__ == "__main__":
    main()
