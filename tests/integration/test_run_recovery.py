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
