"""Issue 38, finding 2: the state database was trusted blindly. Whoever could write it
could make the root scheduler kill any process group (a forged ``running`` row naming a
victim's group and its leader's start time: "ended process group ..."), and one row with
an unknown status crashed ``cronctl run`` at start with a traceback. Now a group is ended
only when ``/proc`` shows it is that attempt's own (docs/trust.md), and a row that cannot
be read is logged and skipped.

Real processes: a root ``setsid sleep``, a real ``cronctl run``, rows written as an
attacker would (the store's own calls, then ``sqlite3``)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite, pid_alive

from cronctl import processes
from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin

pytestmark = pytest.mark.slow

JOB = '[jobs.long]\ncron = "0 0 3 1 1 *"\ncommand = ["sleep", "30"]\n'


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    p.jobs(JOB)
    done = p.cli("db", "upgrade")
    assert done.returncode == 0, done.stderr
    return p


def _forge_running(project: Project, pgid: int, ident: str | None) -> int:
    """A ``running`` row of this node's previous run, naming ``pgid``."""
    store = open_sqlite(project)
    try:
        at = datetime.now(UTC) - timedelta(minutes=1)
        eid = store.try_insert_execution(
            job_id="long", occurrence_id="long@forged", scheduled_at=at, attempt=1,
            origin=Origin.CRON, node_id="node-a", scope_node=None, now=at)
        assert eid is not None
        assert store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.RUNNING)
        store.record_process(eid, pgid, ident)
        return eid
    finally:
        store.close()


def _victim() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["setsid", "sleep", "300"])
    deadline = time.monotonic() + 5
    while os.getpgid(proc.pid) != proc.pid:  # (setsid has run: it leads its own group)
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


def test_a_forged_running_row_does_not_end_a_foreign_process_group(project: Project) -> None:
    victim = _victim()
    try:
        ident = processes.identity(victim.pid)
        assert ident is not None
        eid = _forge_running(project, victim.pid, ident)
        run = project.start()
        try:
            assert run.wait_for(lambda t: "ready node=" in t), run.text()
            deadline = time.monotonic() + 10
            while not _status(project, eid).is_final:
                assert time.monotonic() < deadline, run.text()
                time.sleep(0.05)
            text = run.text()
        finally:
            assert run.stop() == 0, run.text()
        assert victim.poll() is None and pid_alive(victim.pid), text
        assert "ended process group" not in text, text
        assert (f"process group {victim.pid} recorded for interrupted job=long exec={eid} "
                "is not ended: its leader") in text, text
        assert "Traceback" not in text
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(5)


def _status(project: Project, eid: int) -> ExecutionStatus:
    store = open_sqlite(project)
    try:
        [row] = [r for r in store.list_executions(job_id="long", limit=None) if r.id == eid]
        return row.status
    finally:
        store.close()


def _forge_rows(project: Project, sql: str) -> tuple[int, int]:
    """Two running rows of this node's previous run; ``sql`` (with ``{eid}``) spoils the
    second, as ``sqlite3`` in an attacker's (or an older version's) hands would."""
    store = open_sqlite(project)
    try:
        at = datetime.now(UTC).replace(hour=3, minute=0, second=0, microsecond=0)
        if at > datetime.now(UTC):
            at -= timedelta(days=1)
        eids = []
        for attempt in (1, 2):
            eid = store.try_insert_execution(
                job_id="long", occurrence_id=occurrence_id("long", at), scheduled_at=at,
                attempt=attempt,
                origin=Origin.CRON, node_id="node-a", scope_node=None, now=at)
            assert eid is not None
            assert store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.RUNNING)
            eids.append(eid)
    finally:
        store.close()
    db = sqlite3.connect(project.root / "state.db")
    with db:
        db.execute(sql.format(eid=eids[1]))
    db.close()
    return eids[0], eids[1]


@pytest.mark.parametrize("spoil", [
    "UPDATE job_executions SET origin = 'bogus' WHERE id = {eid}",
    "UPDATE job_executions SET created_at = 'bogus' WHERE id = {eid}",
])
def test_run_skips_a_row_it_cannot_read_and_recovers_the_others(project: Project,
                                                                spoil: str) -> None:
    good, bad = _forge_rows(project, spoil)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        deadline = time.monotonic() + 10
        while not _status(project, good).is_final:  # (the other row: recovered)
            assert time.monotonic() < deadline, run.text()
            time.sleep(0.05)
    finally:
        assert run.stop() == 0, run.text()
    text = run.text()
    assert "Traceback" not in text, text
    assert f"WARNING job_executions row id={bad} job=long cannot be read and is skipped: " \
        in text, text


@pytest.mark.parametrize("command", ["history", "status", "why"])
def test_read_commands_skip_a_row_they_cannot_read(project: Project, command: str) -> None:
    good, bad = _forge_rows(project, "UPDATE job_executions SET status = 'bogus' "
                            "WHERE id = {eid}")
    at = datetime.now(UTC).replace(hour=3, minute=0, second=0, microsecond=0)
    if at > datetime.now(UTC):
        at -= timedelta(days=1)
    project.jobs('[jobs.long]\ncron = "0 0 3 * * *"\ncommand = ["sleep", "30"]\n')
    args = {"history": ["history"], "status": ["status"],
            "why": ["why", "long", at.strftime("%Y-%m-%dT%H:%M:%SZ")]}[command]
    done = project.cli(*args)
    text = done.stdout + done.stderr
    assert done.returncode == 0, text
    assert "Traceback" not in text
    assert f"job_executions row id={bad} job=long cannot be read and is skipped: 'bogus' " \
        "is not a valid ExecutionStatus" in done.stderr, text


def test_a_cursor_that_is_not_an_instant_is_taken_as_none(project: Project) -> None:
    db = sqlite3.connect(project.root / "state.db")
    with db:
        db.execute("INSERT INTO job_schedules (job_id, \"cursor\") VALUES ('long', 'bogus')")
    db.close()
    status = project.cli("status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "Traceback" not in status.stderr
    said = ("job_schedules row id=long job=long has a cursor that is not an instant "
            "(Invalid isoformat string: 'bogus'); taken as none")
    assert said in status.stderr, status.stderr
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
    finally:
        assert run.stop() == 0, run.text()
    assert "Traceback" not in run.text() and said in run.text(), run.text()
