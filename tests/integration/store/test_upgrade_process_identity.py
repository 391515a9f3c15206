"""A database at revision 0002 (before process identities) upgrades to the head with its
rows intact, on SQLite and PostgreSQL: old node and execution rows have no process
identity (their liveness falls back on heartbeat ages), new ones record it."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from cronctl import processes
from cronctl.store import migrate as mig
from cronctl.store import open_store
from cronctl.store.engine import make_engine
from cronctl.store.schema import HEAD

T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


def test_upgrade_from_0002_keeps_rows_and_adds_process_identities(db_url: str) -> None:
    stamp = "2026-03-08T07:00:00.000000Z" if db_url.startswith("sqlite") else T0
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            command.upgrade(mig.alembic_config(conn), "0002")
            conn.execute(sa.text(
                "INSERT INTO scheduler_nodes (node_id, host, pid, started_at, heartbeat_at) "
                "VALUES ('old', 'h', 1, :t, :t)"), {"t": stamp})
            conn.execute(sa.text(
                "INSERT INTO job_executions (job_id, occurrence_id, scheduled_at, attempt, "
                "scope, node_id, origin, status, target, created_at) VALUES "
                "('j', 'o', :t, 1, '', 'old', 'cron', 'running', '', :t)"), {"t": stamp})
    finally:
        engine.dispose()
    store = open_store(db_url, node_id="n1")
    try:
        old = store.get_node("old")
        assert old is not None and (old.pid, old.process_start) == (1, None)
        [row] = store.pending_or_running()
        assert (row.node_id, row.pgid, row.process_start) == ("old", None, None)
        me = processes.identity(os.getpid())
        store.record_process(row.id, os.getpid(), me)
        again = store.get_execution(row.id)
        assert again is not None and (again.pgid, again.process_start) == (os.getpid(), me)
    finally:
        store.close()
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert mig.current_revision(conn) == HEAD
    finally:
        engine.dispose()
