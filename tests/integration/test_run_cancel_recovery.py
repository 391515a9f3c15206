"""A cancel racing a SIGKILL: ``cronctl cancel`` answered "cancel requested", then the
scheduler died before it acted on it. The scheduler that recovers the row ends the
occurrence ``cancelled`` and never runs a next attempt."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl.jobs.model import ExecutionStatus

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    p.jobs('''
[jobs.long]
cron = "0 0 3 1 1 *"
command = ["sleep", "30"]
max_attempts = 3
retry_backoff = "1s"
''')
    return p


def _rows(project: Project) -> list:  # type: ignore[type-arg]
    store = open_sqlite(project)
    try:
        return store.list_executions(job_id="long", limit=None)
    finally:
        store.close()


def test_cancel_then_sigkill_ends_cancelled_without_a_next_attempt(project: Project) -> None:
    first = project.start(log_name="first.log")
    second = None
    groups: list[int] = []
    try:
        assert first.wait_for(lambda t: "ready node=" in t), first.text()
        assert project.cli("trigger", "long").returncode == 0
        assert first.wait_for(lambda _: any(r.status is ExecutionStatus.RUNNING
                                            and r.pgid for r in _rows(project)))
        [victim] = _rows(project)
        groups.append(victim.pgid)
        # Frozen, then cancelled, then killed: the node can never act on the request
        # (a cancel the node saw in time is the ordinary path, tested elsewhere).
        os.killpg(first.proc.pid, signal.SIGSTOP)
        cancelled = project.cli("cancel", str(victim.id))
        assert cancelled.returncode == 0, cancelled.stderr
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.proc.wait(5)

        second = project.start(log_name="second.log")
        assert second.wait_for(lambda t: "ready node=" in t), second.text()
        assert second.wait_for(lambda _: _rows(project)[0].status.is_final), second.text()
        # a next attempt is fired together with the recovery, before READY
        assert not second.wait_for(lambda _: len(_rows(project)) > 1, timeout=1.0)
        [row] = _rows(project)
        assert row.status is ExecutionStatus.CANCELLED, row
        assert row.error is not None and row.error.startswith("cancelled: "), row.error
        assert f"exec={victim.id} status=cancelled" in second.text(), second.text()
        store = open_sqlite(project)
        try:
            assert store.guard_locks() == []  # single_instance: the job may run again
        finally:
            store.close()
    finally:
        if second is not None:
            assert second.stop() == 0, second.text()
        first.kill()
        for pgid in groups:  # the killed scheduler's command, if still running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
