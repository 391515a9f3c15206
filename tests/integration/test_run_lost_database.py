"""The database under a running node changes (issue: "deleting the SQLite file is silent,
then runs twice"; "a running scheduler keeps writing after the schema moves on"). A node
notices at its next heartbeat that its SQLite file was deleted, says so in one ERROR and
stops (exit 1); no process creates a new database at a path whose deleted file another
process still holds; a node finds on SIGHUP that another cronctl moved the schema to a
newer revision, and stops writing."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from test_run_support import Project

pytestmark = pytest.mark.slow

JOBS = '''
[jobs.solo]
every = "1s"
mode = "single_instance"
command = ["true"]
'''


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    p.jobs(JOBS)
    return p


def test_a_deleted_database_file_stops_the_node(project: Project, tmp_path: Path) -> None:
    node = project.start()
    try:
        assert node.wait_for(lambda t: "ready node=" in t, 20), node.text()
        (tmp_path / "state.db").unlink()
        began = time.monotonic()
        code = node.proc.wait(20)
        took = time.monotonic() - began
    finally:
        node.kill()
    text = node.text()
    assert code == 1, text
    assert "ERROR" in text and f"the database file {tmp_path / 'state.db'} was deleted" in text
    assert "error: stopped: the database file" in text
    assert took < 10, took  # the next heartbeat (heartbeat_interval 1s) and the stop
    assert not (tmp_path / "state.db").exists()  # nothing created it again


def test_no_new_database_beside_a_deleted_one_still_in_use(project: Project,
                                                           tmp_path: Path) -> None:
    assert project.cli("db", "upgrade").returncode == 0
    holder = subprocess.Popen(
        ["python3", "-c", "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({str(tmp_path / 'state.db')!r})\n"
         "c.execute('SELECT 1').fetchone(); print('open', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        (tmp_path / "state.db").unlink()
        for argv in (("run",), ("db", "upgrade")):
            done = project.cli(*argv, timeout=30)
            assert done.returncode == 1, (argv, done.stderr)
            assert f"was deleted while process {holder.pid} still uses it" in done.stderr
            assert "Traceback" not in done.stderr
            assert not (tmp_path / "state.db").exists(), argv
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
    # once nobody holds the old file, a new database is what the user asked for
    assert project.cli("db", "upgrade").returncode == 0
    assert (tmp_path / "state.db").exists()


def test_a_newer_schema_stops_writing_on_sighup(project: Project, tmp_path: Path) -> None:
    import signal

    node = project.start()
    try:
        assert node.wait_for(lambda t: "ready node=" in t, 20), node.text()
        with sqlite3.connect(tmp_path / "state.db") as conn:
            conn.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
        conn.close()
        node.signal(signal.SIGHUP)
        code = node.proc.wait(20)
    finally:
        node.kill()
    text = node.text()
    assert code == 1, text
    assert "newer than this cronctl" in text and "stops acting" in text, text


def test_a_connection_made_after_the_file_was_deleted_creates_no_new_file(
        tmp_path: Path) -> None:
    """SQLite drops a connection whose writes to an unlinked file it refuses; the pool's
    next connection must not create an empty database at the path (the node would then
    run on beside a new file, and its check would find the file "replaced")."""
    from cronctl.errors import StoreError
    from cronctl.store import open_store
    from cronctl.store.sql import SqlStore

    path = tmp_path / "state.db"
    store = open_store(f"sqlite:///{path}", node_id="n1")
    try:
        assert isinstance(store, SqlStore)
        path.unlink()
        store.engine.dispose()  # every pooled connection gone: the next one is new
        with pytest.raises(StoreError):
            store.list_schedules()
        assert not path.exists()
    finally:
        store.close()
    assert not path.exists()
