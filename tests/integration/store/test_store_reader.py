"""The reader of the read commands (:mod:`cronctl.store.reader`: ``sqlite3`` or psycopg, no
SQLAlchemy) serves the store's whole :class:`~cronctl.store.base.Reads` role and returns
what the SQL store returns, on SQLite and PostgreSQL; a database it cannot read at the
schema head is left to the full store."""

from __future__ import annotations

import inspect
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.jobs.model import ExecutionStatus as S
from cronctl.jobs.model import Origin
from cronctl.store import Store
from cronctl.store.base import Reads
from cronctl.store.reader import DbReader, open_reader
from cronctl.store.records import SchemaMismatch, StoreUnavailable
from cronctl.store.writerecords import SkipRun

T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)


def _fill(store: Store) -> dict[str, int]:
    ids: dict[str, int] = {}
    for n, (job, status) in enumerate([("a", S.SUCCEEDED), ("a", S.FAILED), ("b", S.RUNNING),
                                       ("b", S.CANCELLED), ("a", S.PENDING)]):
        at = T0 + timedelta(minutes=n)
        eid = store.try_insert_execution(
            job_id=job, occurrence_id=f"{job}-{n}", scheduled_at=at, attempt=1,
            origin=Origin.CRON if n % 2 else Origin.MANUAL, node_id="n1",
            scope_node=None if n % 2 else "n1", target="command: true", now=at)
        assert eid is not None
        ids[f"{job}{n}"] = eid
        if status is not S.PENDING:
            store.transition(eid, S.PENDING, S.RUNNING, started_at=at + timedelta(seconds=1))
        if status not in (S.PENDING, S.RUNNING):
            store.transition(eid, S.RUNNING, status, error="boom\nline 2" if n == 1 else None,
                             finished_at=at + timedelta(seconds=2, microseconds=250))
    store.record_progress(ids["b2"], 3, 10, "three of ten")
    store.request_cancel(ids["b2"])
    store.append_logs([(ids["a1"], T0, "INFO", "one"), (ids["a1"], T0, "WARNING", "two é")])
    store.record_skips([SkipRun("a", "overlap", T0 + timedelta(seconds=30),
                                T0 + timedelta(minutes=3, seconds=30), 4, "n1",
                                detail="held")])
    store.set_paused("b", True)
    store.save_definitions([])
    store.advance_cursor("a", T0 + timedelta(minutes=4))
    store.register_node("n1", "host-1", os.getpid(), datetime.now(UTC), ttl=TTL)
    store.note_delivery("n1", ok=False, error="webhook: 500", now=T0)
    for minutes in (1, 2):  # requests no scheduler acted on (status lists them)
        store.enqueue_trigger("a", Origin.REPLAY, scheduled_at=T0 + timedelta(minutes=minutes),
                              now=T0 + timedelta(seconds=minutes))
    return ids


def test_the_reader_returns_what_the_store_returns(store: Store, store_url: str) -> None:
    ids = _fill(store)
    reader = open_reader(store_url)
    assert reader is not None
    now = datetime.now(UTC)
    try:
        calls = {
            "get_execution": lambda s: [s.get_execution(i) for i in (*ids.values(), 999)],
            "list_executions": lambda s: [
                s.list_executions(), s.list_executions(job_id="a", limit=2),
                s.list_executions(status=[S.FAILED, S.CANCELLED]),
                s.list_executions(status=S.RUNNING, job_id="b"),
                s.list_executions(status=[], limit=None),
                s.list_executions(since=T0 + timedelta(minutes=1),
                                  until=T0 + timedelta(minutes=3), limit=None),
                s.list_executions(limit=2, before=(T0 + timedelta(minutes=2), ids["a1"]))],
            "slot_counts": lambda s: [s.slot_counts(["a", "b", "zz"], T0, timedelta(minutes=1), 10),
                                      s.slot_counts([], T0, timedelta(minutes=1), 10)],
            "latest_executions": lambda s: s.latest_executions(["a", "b", "zz"]),
            "recent_executions": lambda s: [s.recent_executions(["a", "b", "zz"], 3),
                                            s.recent_executions(["a"], 1)],
            "executions_of_occurrence": lambda s: s.executions_of_occurrence("a", "a-1"),
            "pending_or_running": lambda s: [
                s.pending_or_running(), s.pending_or_running(job_ids=["b"]),
                s.pending_or_running(node_id="n1"), s.pending_or_running(node_ids=[])],
            "read_logs": lambda s: [s.read_logs(ids["a1"]), s.read_logs(ids["a1"], after_seq=1),
                                    s.read_logs(ids["a1"], limit=1), s.read_logs(999)],
            "list_skips": lambda s: [s.list_skips(), s.list_skips(job_id="b"),
                                     s.list_skips(since=T0 + timedelta(minutes=4))],
            "skips_covering": lambda s: [s.skips_covering("a", T0 + timedelta(minutes=2)),
                                         s.skips_covering("a", T0)],
            "get_schedule": lambda s: [s.get_schedule("a"), s.get_schedule("b"),
                                       s.get_schedule("zz")],
            "list_schedules": lambda s: s.list_schedules(),
            "paused_job_ids": lambda s: s.paused_job_ids(),
            "live_nodes": lambda s: s.live_nodes(now, TTL),
            "delivery_failures": lambda s: [s.delivery_failures(),
                                            s.delivery_failures(["zz"])],
            "waiting_triggers": lambda s: [s.waiting_triggers(10), s.waiting_triggers(1)],
        }
        assert set(calls) == _members(Reads)  # every read of the role is compared
        for name, call in calls.items():
            expected = call(store)
            assert call(reader) == expected, name
        assert reader.list_executions(job_id="a", limit=1)[0].id == ids["a4"]
        store.set_paused("b", True)
        assert reader.paused_job_ids() == store.paused_job_ids() == {"b"}
        assert reader.live_nodes(now, TTL)[0].node_id == "n1"
        record = reader.get_execution(ids["b2"])
        assert record is not None and record.cancel_requested
        assert record.progress_done == 3.0 and record.progress_message == "three of ten"
    finally:
        reader.close()


def _members(protocol: type) -> set[str]:
    return {name for name, value in vars(protocol).items()
            if not name.startswith("_") and callable(value)}


def test_the_reader_has_the_read_role_s_signatures() -> None:
    for name in _members(Reads):
        assert inspect.signature(getattr(DbReader, name)) == inspect.signature(
            getattr(Reads, name)), name


def test_a_database_not_at_the_head_is_left_to_the_store(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    assert open_reader(f"sqlite:///{missing}") is None
    assert not missing.exists()  # never created
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    assert open_reader(f"sqlite:///{empty}") is None  # no tables
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        conn.execute("INSERT INTO alembic_version VALUES ('0006')")
    assert open_reader(f"sqlite:///{old}") is None  # auto_migrate may upgrade it
    assert open_reader("sqlite:///:memory:") is None


def test_driver_errors_are_the_store_s_messages(store: Store, store_url: str) -> None:
    reader = open_reader(store_url)
    assert reader is not None
    try:
        from cronctl.store.sql import SqlStore

        assert isinstance(store, SqlStore)
        with store.engine.begin() as conn:
            conn.exec_driver_sql("DROP TABLE job_logs")
        with pytest.raises(SchemaMismatch, match="has no cronctl tables.*cronctl db upgrade"):
            reader.read_logs(1)
    finally:
        reader.close()


def test_a_file_that_is_no_database_is_left_to_the_store(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database" * 512)
    assert open_reader(f"sqlite:///{broken}") is None


def test_an_unreachable_server_is_one_clear_error() -> None:
    with pytest.raises(StoreUnavailable, match=r"cannot reach database .*u:\*\*\*@"):
        open_reader("postgresql+psycopg://u:secret@127.0.0.1:1/nothing")
