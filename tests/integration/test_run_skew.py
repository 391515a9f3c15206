"""Issue 9, finding 6: a start refused for clock skew writes nothing at all (SPEC section
4, "Clocks": no node row, no timestamp), and says why in one line."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

pytestmark = pytest.mark.slow

JOBS = '''
[jobs.tick]
every = "1s"
command = ["true"]

[jobs.nightly]
cron = "0 0 3 * * *"
command = ["true"]
'''

AUDIT = '''
CREATE TABLE audit (what TEXT NOT NULL);
CREATE TRIGGER audit_node_insert AFTER INSERT ON scheduler_nodes
    BEGIN INSERT INTO audit VALUES ('node row inserted'); END;
CREATE TRIGGER audit_node_update AFTER UPDATE ON scheduler_nodes
    BEGIN INSERT INTO audit VALUES ('node row updated'); END;
CREATE TRIGGER audit_schedule_update AFTER UPDATE ON job_schedules
    BEGIN INSERT INTO audit VALUES ('schedule ' || NEW.job_id || ' updated'); END;
CREATE TRIGGER audit_schedule_insert AFTER INSERT ON job_schedules
    BEGIN INSERT INTO audit VALUES ('schedule ' || NEW.job_id || ' inserted'); END;
CREATE TRIGGER audit_locks AFTER DELETE ON guard_locks
    BEGIN INSERT INTO audit VALUES ('lock deleted'); END;
'''


def test_a_start_refused_for_clock_skew_writes_nothing(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(JOBS)
    assert project.cli("db", "upgrade").returncode == 0
    store = open_sqlite(project)
    written = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        # Another node, with a correct clock, handled an instant an hour from this clock.
        store.advance_cursor("tick", datetime.now(UTC) + timedelta(hours=1))
        store.advance_cursor("nightly", datetime.now(UTC) - timedelta(days=1))
        before = {s.job_id: s for s in store.list_schedules()}
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "state.db") as db:
        db.executescript(AUDIT)
        db.execute("UPDATE job_schedules SET updated_at = ?", ("2026-01-01T00:00:00.000000Z",))
        db.execute("DELETE FROM audit")
    result = project.cli("run", timeout=30)
    assert result.returncode != 0
    assert "clock skew" in result.stderr and "tick" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    with sqlite3.connect(tmp_path / "state.db") as db:
        assert db.execute("SELECT what FROM audit").fetchall() == []
        assert db.execute("SELECT count(*) FROM scheduler_nodes").fetchone() == (0,)
    store = open_sqlite(project)
    try:
        after = {s.job_id: s for s in store.list_schedules()}
    finally:
        store.close()
    assert {j: s.updated_at for j, s in after.items()} == {j: written for j in before}
    assert {j: s.cursor for j, s in after.items()} == {j: s.cursor for j, s in before.items()}
