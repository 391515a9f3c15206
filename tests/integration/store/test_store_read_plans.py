"""The read commands' queries find their rows through an index on a big table.

SQLite plans from statistics: the tests give the planner those of a 1M-execution table
(100 jobs; each status a quarter of the rows, as ``ANALYZE`` reports it) and check the
plan of every query ``history``, ``logs``, ``status`` and ``why`` make: none may walk the
table (a ``SCAN`` of ``job_executions``), which on 1M rows takes 0.1-0.6 s. The merged
results of the split queries (several statuses) are checked on both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cronctl.jobs.model import ExecutionStatus as S
from cronctl.jobs.model import Origin
from cronctl.store import Store, open_store
from cronctl.store.reader import DbReader, open_reader
from cronctl.store.reads import LIVE_INDEX, ReadQueries
from cronctl.store.sql import SqlStore

T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
ROWS = 1_000_000
# Rows per distinct value of each column, as ANALYZE measured them on the bench's table.
PER_VALUE = {"job_id": 10_000, "status": 250_000, "node_id": 250_000, "scheduled_at": 100,
             "occurrence_id": 1, "scope": 1, "attempt": 1, "id": 1, "last_at": 100,
             "first_at": 100}


@pytest.fixture
def big(tmp_path: Path) -> Iterator[SqlStore]:
    """A migrated SQLite store whose planner believes job_executions holds 1M rows."""
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    assert isinstance(store, SqlStore)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")  # creates sqlite_stat1
        conn.exec_driver_sql("DELETE FROM sqlite_stat1")
        for table in ("job_executions", "skip_records"):
            rows = ROWS if table == "job_executions" else 10_000
            for (name,) in conn.exec_driver_sql(
                    f"SELECT name FROM sqlite_master WHERE type = 'index' "
                    f"AND tbl_name = '{table}'").fetchall():
                columns = [r[2] for r in conn.exec_driver_sql(f"PRAGMA index_info('{name}')")]
                stat, per = [rows], rows
                for column in columns:
                    per = min(per, PER_VALUE[column])
                    stat.append(per)
                conn.exec_driver_sql("INSERT INTO sqlite_stat1 VALUES (?, ?, ?)",
                                     (table, name, " ".join(map(str, stat))))
        conn.exec_driver_sql("ANALYZE sqlite_schema")  # the planner reloads the statistics
    yield store
    store.close()


def plans(store: SqlStore, call: Callable[[], Any]) -> list[str]:
    """The query plan lines of every statement ``call`` runs on ``store`` (or on a reader
    of its file: both run the queries of :class:`cronctl.store.reads.ReadQueries`)."""
    seen: list[tuple[str, Any]] = []
    original = ReadQueries._rows

    def record(self: ReadQueries, cur: Any, text: str, params: Any = ()) -> list[Any]:
        seen.append((text, tuple(params)))
        return original(self, cur, text, params)

    ReadQueries._rows = record  # type: ignore[method-assign]
    try:
        call()
    finally:
        ReadQueries._rows = original  # type: ignore[method-assign]
    out: list[str] = []
    with store.engine.connect() as conn:
        for statement, parameters in seen:
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            out.extend(str(r[3]) for r in rows)
    return out


def _walks_a_table(plan: list[str]) -> list[str]:
    """Scans of a big table. A scan of the partial index of live rows is not one: it
    holds the pending and running rows only (here its statistics say 1M rows, and it is
    still the plan: status does not depend on them)."""
    return [line for line in plan if line.startswith(("SCAN job_executions",
                                                      "SCAN skip_records"))
            and not line.endswith(f"USING INDEX {LIVE_INDEX}")]


CASES: dict[str, Callable[[Store], object]] = {
    "history --status S": lambda s: s.list_executions(status=S.CANCELLED, limit=20),
    "history --status S1,S2": lambda s: s.list_executions(status=[S.CANCELLED, S.ABANDONED],
                                                          limit=20),
    "history JOB": lambda s: s.list_executions(job_id="j1", limit=20),
    "history JOB --status S": lambda s: s.list_executions(job_id="j1", status=S.CANCELLED,
                                                          limit=20),
    "history --since --until": lambda s: s.list_executions(
        since=T0, until=T0 + timedelta(hours=1), limit=20),
    "history --status S --since": lambda s: s.list_executions(status=S.FAILED, since=T0,
                                                              limit=20),
    "history --status skipped JOB": lambda s: s.list_skips(job_id="j1", since=T0, limit=20),
    "logs --job JOB": lambda s: s.list_executions(job_id="j1", limit=1),
    "status": lambda s: (s.pending_or_running(), s.recent_executions(["j1", "j2"], 5)),
    "recovery of a node": lambda s: s.pending_or_running(node_id="n2"),
    "why": lambda s: (s.executions_of_occurrence("j1", "0" * 32), s.skips_covering("j1", T0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_read_query_walks_the_table(big: SqlStore, case: str) -> None:
    plan = plans(big, lambda: CASES[case](big))
    assert plan, "no query seen"
    assert not _walks_a_table(plan), plan


READER_CASES: dict[str, Callable[[DbReader], object]] = {
    "history --status S": lambda r: r.list_executions(status=S.CANCELLED, limit=20),
    "history JOB --status S": lambda r: r.list_executions(job_id="j1", status=S.CANCELLED,
                                                          limit=20),
    "history --since --until": lambda r: r.list_executions(
        since=T0, until=T0 + timedelta(hours=1), limit=20),
    "history --status skipped": lambda r: r.list_skips(since=T0, limit=20),
    "logs ID": lambda r: (r.get_execution(5), r.read_logs(5)),
    "status": lambda r: (r.pending_or_running(), r.latest_executions(["j1", "j2"]),
                         r.recent_executions(["j1", "j2"], 5),
                         r.list_schedules(), r.delivery_failures()),
    "why": lambda r: (r.executions_of_occurrence("j1", "0" * 32), r.skips_covering("j1", T0),
                      r.get_schedule("j1")),
    "list": lambda r: r.latest_executions(["j1", "j2", "j3"]),
}


@pytest.mark.parametrize("case", list(READER_CASES))
def test_the_reader_walks_no_table_either(big: SqlStore, case: str) -> None:
    reader = open_reader(big.display_url)
    assert reader is not None
    try:
        plan = plans(big, lambda: READER_CASES[case](reader))
    finally:
        reader.close()
    assert plan, "no query seen"
    assert not _walks_a_table(plan), plan


def test_unfiltered_history_reads_in_index_order(big: SqlStore) -> None:
    for call in (lambda: big.list_executions(limit=20), lambda: big.list_skips(limit=20)):
        plan = plans(big, call)
        assert plan and all("USING INDEX" in line for line in plan), plan
        assert not any("TEMP B-TREE" in line for line in plan), plan


def _insert(store: Store, job: str, at: datetime, status: S) -> int:
    new_id = store.try_insert_execution(
        job_id=job, occurrence_id=f"{job}-{at.isoformat()}"[:64], scheduled_at=at, attempt=1,
        origin=Origin.CRON, node_id="n1", scope_node="n1", now=at)
    assert new_id is not None
    store.transition(new_id, S.PENDING, status)
    return new_id


def test_several_statuses_are_merged_newest_first(store: Store) -> None:
    statuses = [S.FAILED, S.SUCCEEDED, S.CANCELLED, S.FAILED, S.SUCCEEDED, S.FAILED]
    ids = [_insert(store, "a", T0 + timedelta(minutes=m), st) for m, st in enumerate(statuses)]
    same = _insert(store, "b", T0 + timedelta(minutes=5), S.CANCELLED)  # ties: id decides
    got = store.list_executions(status=[S.FAILED, S.CANCELLED, S.FAILED], limit=3)
    assert [r.id for r in got] == [same, ids[5], ids[3]]
    assert [r.id for r in store.list_executions(job_id="a", status=[S.CANCELLED, S.FAILED],
                                                since=T0 + timedelta(minutes=1))] == [
        ids[5], ids[3], ids[2]]
    everything = store.list_executions(status=[S.FAILED, S.CANCELLED], limit=None)
    assert [r.id for r in everything] == [same, ids[5], ids[3], ids[2], ids[0]]


def test_live_rows_in_planned_order(store: Store) -> None:
    late = _insert(store, "a", T0 + timedelta(minutes=9), S.RUNNING)
    early = _insert(store, "b", T0, S.RUNNING)
    _insert(store, "c", T0 + timedelta(minutes=1), S.SUCCEEDED)
    tie = store.try_insert_execution(job_id="d", occurrence_id="d0", scheduled_at=T0,
                                     attempt=1, origin=Origin.CRON, node_id="n1",
                                     scope_node="n1", now=T0)
    assert [r.id for r in store.pending_or_running()] == [early, tie, late]


def test_job_and_status_are_both_looked_up(big: SqlStore) -> None:
    # Without an index on both, the job's rows are read one by one for the status: a
    # per-second job kept 30 days is 2.6M of them.
    plan = plans(big, lambda: big.list_executions(job_id="j1", status=S.CANCELLED, limit=20))
    assert any("(job_id=? AND status=?)" in line for line in plan), plan
