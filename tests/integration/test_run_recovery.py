"""A scheduler killed with SIGKILL restarts at once under the same node id, and the
execution it was running is recovered: same occurrence id, next attempt."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite, pid_alive

from cronctl.jobs.model import ExecutionStatus

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")


def test_sigkill_then_restart_recovers_the_running_occurrence(project: Project) -> None:
    pids = project.root / "pids"
    project.jobs(f'''
[jobs.long]
cron = "* * * * * *"
command = ["sh", "-c", "echo $$ >> {pids}; exec sleep 30"]
max_attempts = 3
''')
    first = project.start("-v", log_name="first.log")  # each fire's own line
    second = None
    try:
        assert first.wait_for(lambda t: "fired job=long" in t), first.text()
        assert first.wait_for(lambda _: pids.exists() and pids.read_text().strip() != "")
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(5)

        store = open_sqlite(project)
        try:
            killed = [r for r in store.list_executions(job_id="long", limit=None)
                      if r.status is ExecutionStatus.RUNNING]
        finally:
            store.close()
        assert len(killed) == 1, killed
        victim = killed[0]

        # Same node id, immediately: the dead holder must not block the restart.
        second = project.start(log_name="second.log")
        assert second.wait_for(lambda t: "ready node=node-a" in t), second.text()

        def recovered(_: str) -> bool:
            store = open_sqlite(project)
            try:
                rows = store.executions_of_occurrence("long", victim.occurrence_id)
            finally:
                store.close()
            return any(r.attempt == victim.attempt + 1 for r in rows)

        assert second.wait_for(recovered), second.text()
        store = open_sqlite(project)
        try:
            rows = store.executions_of_occurrence("long", victim.occurrence_id)
        finally:
            store.close()
        assert rows[0].id == victim.id and rows[0].status is not ExecutionStatus.RUNNING
        # its outcome is unknown: lost, not failed; the attempt recovery runs in its place
        # carries a fencing token (every_instance attempts otherwise have none)
        assert rows[0].status is ExecutionStatus.LOST and rows[0].fencing_token is None
        assert rows[0].error is not None and rows[0].error.startswith("lost: ")
        assert rows[1].attempt == victim.attempt + 1 and rows[1].fencing_token is not None
        assert [r.scheduled_at for r in rows] == [victim.scheduled_at] * len(rows)
    finally:
        if second is not None:
            assert second.stop() == 0, second.text()
        first.kill()
        if pids.exists():  # the first scheduler's orphaned child, killed with it gone
            for line in pids.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    if pid_alive(int(line)):
                        os.killpg(int(line), signal.SIGKILL)


def test_a_cancel_that_raced_a_sigkill_is_honoured_by_recovery(project: Project) -> None:
    """``cronctl cancel`` answered "cancel requested", then the scheduler was SIGKILLed
    before it saw the request: the restarted scheduler ends the occurrence cancelled and
    never runs it again (it ran attempt 2 before)."""
    project.jobs('''
[jobs.long]
cron = "0 0 0 1 1 *"
command = ["sleep", "30"]
max_attempts = 3
''')
    first = project.start(log_name="first.log")
    second = None
    try:
        assert first.wait_for(lambda t: "ready node=node-a" in t), first.text()
        assert project.cli("trigger", "long").returncode == 0
        store = open_sqlite(project)
        try:
            [victim] = store.list_executions(job_id="long", limit=None)
        finally:
            store.close()
        os.killpg(first.proc.pid, signal.SIGKILL)  # the scheduler and its command
        first.proc.wait(5)
        cancel = project.cli("cancel", str(victim.id))
        assert cancel.returncode == 0, cancel.stderr
        assert "cancel requested" in cancel.stdout + cancel.stderr

        second = project.start(log_name="second.log")
        assert second.wait_for(lambda t: "ready node=node-a" in t), second.text()
        assert second.wait_for(lambda t: f"exec={victim.id} status=cancelled" in t,
                               10), second.text()
        second.wait_for(lambda _: False, 2.5)  # a second attempt would have started by now
        store = open_sqlite(project)
        try:
            rows = store.executions_of_occurrence("long", victim.occurrence_id)
        finally:
            store.close()
        assert [(r.id, r.status) for r in rows] == [(victim.id, ExecutionStatus.CANCELLED)]
        assert rows[0].error is not None and rows[0].error.startswith("cancelled: ")
    finally:
        if second is not None:
            assert second.stop() == 0, second.text()
        first.kill()
