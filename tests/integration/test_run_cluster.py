"""Two ``cronctl run`` processes (different node ids) sharing one database: a
single_instance job runs each planned instant exactly once, on SQLite and PostgreSQL."""

from __future__ import annotations

import collections
import time
from datetime import timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl.jobs.model import ExecutionStatus

pytestmark = pytest.mark.slow

JOB = '''
[jobs.solo]
every = "1s"
mode = "single_instance"
command = ["sh", "-c", "echo ran on $CRONCTL_FENCING_TOKEN"]
'''


def _two_nodes(project: Project) -> None:
    project.jobs(JOB)
    config_b = project.write_config("node-b", name="cronctl-b.toml")
    a = project.start(log_name="a.log")
    b = project.start(config=config_b, log_name="b.log")
    try:
        assert a.wait_for(lambda t: "ready node=node-a" in t), a.text()
        assert b.wait_for(lambda t: "ready node=node-b" in t), b.text()
        time.sleep(4.5)
    finally:
        codes = (a.stop(), b.stop())
    assert codes == (0, 0), a.text() + b.text()
    # issue 24: SQLite is one host; the second node says so (at least one of them checks
    # after the other registered)
    warned = "another scheduler is live on this SQLite file" in a.text() + b.text()
    assert warned == project.database.startswith("sqlite"), a.text() + b.text()
    store = open_sqlite(project)
    try:
        rows = store.list_executions(job_id="solo", limit=None)
    finally:
        store.close()
    per_instant = collections.Counter(r.scheduled_at for r in rows)
    assert rows and max(per_instant.values()) == 1, per_instant
    instants = sorted(per_instant)
    # no gaps from the first to the last instant while both ran
    assert all(b - a == timedelta(seconds=1) for a, b in zip(instants, instants[1:],
                                                             strict=False)), instants
    assert len(instants) >= 4
    assert all(r.status is ExecutionStatus.SUCCEEDED for r in rows), rows
    tokens = [r.fencing_token for r in sorted(rows, key=lambda r: r.scheduled_at)]
    assert all(t is not None for t in tokens)
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)


def test_single_instance_exactly_once_on_sqlite(tmp_path: Path) -> None:
    _two_nodes(Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}"))


@pytest.mark.postgres
def test_single_instance_exactly_once_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    _two_nodes(Project(tmp_path, postgres_url))
