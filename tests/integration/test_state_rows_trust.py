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
