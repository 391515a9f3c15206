"""A retry waiting for its backoff survives a stop (SPEC section 4: no occurrence is
lost): the next attempt is a pending row from the moment the failure is recorded, and
the restarted scheduler runs it after what is left of its backoff."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl.jobs.model import ExecutionStatus

pytestmark = pytest.mark.slow

JOB = '''
[jobs.flaky]
every = "1s"
command = ["sh", "-c", "exit 3"]
max_attempts = 3
retry_backoff = "2s"
'''


def _attempts(project: Project, occurrence: str):  # type: ignore[no-untyped-def]
    store = open_sqlite(project)
    try:
        return store.executions_of_occurrence("flaky", occurrence)
    finally:
        store.close()


def test_sigterm_during_a_retry_backoff_then_restart_runs_the_retry(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(JOB)
    first = project.start(log_name="first.log")
    try:
        assert first.wait_for(lambda t: "retry scheduled job=flaky attempt=2" in t), \
            first.text()
    finally:
        assert first.stop() == 0, first.text()
    store = open_sqlite(project)
    try:
        [failed] = [r for r in store.list_executions(job_id="flaky", limit=None)
                    if r.attempt == 1 and r.status is ExecutionStatus.FAILED]
    finally:
        store.close()
    rows = _attempts(project, failed.occurrence_id)
    assert [(r.attempt, r.status) for r in rows] == [
        (1, ExecutionStatus.FAILED), (2, ExecutionStatus.PENDING)], rows

    second = project.start(log_name="second.log")
    try:
        assert second.wait_for(
            lambda _: _attempts(project, failed.occurrence_id)[-1].status
            is ExecutionStatus.DEAD_LETTER, timeout=15), second.text()
    finally:
        assert second.stop() == 0, second.text()
    rows = _attempts(project, failed.occurrence_id)
    assert [(r.attempt, r.status) for r in rows] == [
        (1, ExecutionStatus.FAILED), (2, ExecutionStatus.FAILED),
        (3, ExecutionStatus.DEAD_LETTER)], rows
    assert {r.scheduled_at for r in rows} == {failed.scheduled_at}
    one, two, three = rows
    assert one.finished_at is not None and two.started_at is not None
    assert two.finished_at is not None and three.started_at is not None
    # each retry waited its backoff (2 s, then 4 s), also across the restart
    assert (two.started_at - one.finished_at).total_seconds() >= 1.9
    assert (three.started_at - two.finished_at).total_seconds() >= 3.9
