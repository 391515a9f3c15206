"""A database created at revision 0001 (before guard locks) upgrades to the head with its
rows intact, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import migrate as mig
from cronctl.store import open_store
from cronctl.store.base import NewExecution, group_lock
from cronctl.store.engine import make_engine
from cronctl.store.schema import HEAD

T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


def test_upgrade_from_0001_keeps_rows_and_adds_guard_locks(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            command.upgrade(mig.alembic_config(conn), "0001")
            conn.execute(sa.text(
                "INSERT INTO job_schedules (job_id, definition, paused, fencing_token) "
                "VALUES ('old', '{}', false, 4)"))
        with engine.connect() as conn:
            assert "guard_locks" not in sa.inspect(conn).get_table_names()
            assert mig.current_revision(conn) == "0001"
    finally:
        engine.dispose()
    store = open_store(db_url, node_id="n1")
    try:
        state = store.get_schedule("old")
        assert state is not None and state.fencing == 4
        [eid] = store.insert_guarded([NewExecution(
            job_id="j", occurrence_id="o", scheduled_at=T0, attempt=1, origin=Origin.CRON,
            node_id="n1", scope_node="n1", status=ExecutionStatus.RUNNING, created_at=T0,
            locks=(group_lock("g"),))])
        assert isinstance(eid, int)
        assert [g.key for g in store.guard_locks()] == [group_lock("g")]
    finally:
        store.close()
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert mig.current_revision(conn) == HEAD
    finally:
        engine.dispose()
