"""Issue 9, finding 1: a command must not outlive its killed scheduler and run beside its
own retry (SPEC section 4, "No attempt outlives its scheduler").

A single_instance command runs; its scheduler is killed with SIGKILL and restarted under
the same node id. The command dies with the scheduler (parent-death signal); what it
forked lives on in its process group until recovery ends it, before the next attempt
starts; and the interrupted row is closed with the time its process group ended, not
the time of the recovery."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite, pid_alive

from cronctl.jobs.model import ExecutionStatus
from cronctl.store.base import ExecutionRecord

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")


def _wait_file(path: Path, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return path.read_text().split()


def _attempts(project: Project, victim: ExecutionRecord) -> list[ExecutionRecord]:
    store = open_sqlite(project)
    try:
        return store.executions_of_occurrence(victim.job_id, victim.occurrence_id)
    finally:
        store.close()


def _running(project: Project) -> ExecutionRecord:
    deadline = time.monotonic() + 10
    while True:
        store = open_sqlite(project)
        try:
            rows = store.pending_or_running(job_ids=["long"])
        finally:
            store.close()
        if rows and rows[0].pgid is not None:
            return rows[0]
        assert time.monotonic() < deadline, "no running row with its process group"
        time.sleep(0.05)


def _restart_after_kill(project: Project) -> tuple[ExecutionRecord, list[ExecutionRecord],
                                                   datetime, datetime, str]:
    first = project.start("-v", log_name="first.log")  # each fire's own line
    second = None
    try:
        assert first.wait_for(lambda t: "fired job=long" in t), first.text()
        victim = _running(project)
        first.proc.send_signal(signal.SIGKILL)
        killed = datetime.now(UTC)
        first.proc.wait(5)
        time.sleep(1.0)  # systemd would restart it after RestartSec
        restarted = datetime.now(UTC)
        second = project.start(log_name="second.log")
        deadline = time.monotonic() + 15
        while len(rows := _attempts(project, victim)) < 2 or rows[1].started_at is None:
            assert time.monotonic() < deadline, second.text()
            time.sleep(0.05)
        # The row is written before its log line, which a log thread writes: wait for it.
        assert second.wait_for(lambda t: "attempt=2" in t, 15), second.text()
        return victim, rows, killed, restarted, second.text()
    finally:
        if second is not None:
            assert second.stop() == 0, second.text()
        first.kill()


def test_the_command_dies_with_its_scheduler_and_the_row_keeps_its_real_end(
        project: Project) -> None:
    pids = project.root / "pids"
    project.jobs(f'''
[jobs.long]
cron = "* * * * * *"
mode = "single_instance"
max_attempts = 3
command = ["sh", "-c", "echo $$ >> {pids}; exec sleep 20"]
''')
    try:
        victim, rows, killed, restarted, _ = _restart_after_kill(project)
        first_pid = int(_wait_file(pids)[0])
        assert not pid_alive(first_pid)  # it died with its scheduler, not after 20 s
        old, new = rows[0], rows[1]
        assert (old.id, old.status, new.attempt) == (victim.id, ExecutionStatus.LOST, 2)
        assert old.finished_at is not None and new.started_at is not None
        # Its real end: when its scheduler (and with it the command) died, before the
        # restart recovered it; never beside attempt 2.
        assert old.finished_at <= killed + timedelta(milliseconds=100)
        assert old.finished_at < restarted <= new.started_at
    finally:
        _kill_all(pids)


def test_what_the_command_forked_is_ended_before_the_next_attempt(project: Project) -> None:
    pids = project.root / "pids"
    project.jobs(f'''
[jobs.long]
cron = "* * * * * *"
mode = "single_instance"
max_attempts = 3
kill_timeout = "1s"
command = ["sh", "-c", "sleep 30 & echo $! >> {pids}; wait"]
''')
    try:
        victim, rows, killed, restarted, log = _restart_after_kill(project)
        [grandchild, *_] = [int(p) for p in _wait_file(pids)]
        assert not pid_alive(grandchild)
        old, new = rows[0], rows[1]
        assert old.finished_at is not None and new.started_at is not None
        # The group outlived the shell (the leader) until recovery ended it: that is when
        # the attempt ended, and attempt 2 started after.
        assert restarted <= old.finished_at <= new.started_at
        ended = log.index(f"ended process group {victim.pgid} of interrupted job=long")
        assert ended < log.index("attempt=2")
    finally:
        _kill_all(pids)


def _kill_all(pids: Path) -> None:
    if pids.exists():
        for line in pids.read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if pid_alive(int(line)):
                    os.kill(int(line), signal.SIGKILL)
