"""Two ``cronctl run`` nodes on one PostgreSQL database: node A is killed (SIGKILL) while
it runs a single_instance execution; once A's heartbeat expires, node B recovers that
occurrence (same occurrence id, next attempt, a higher fencing token) (SPEC section 4)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
from test_run_support import Project, pid_alive

from cronctl.jobs.model import ExecutionStatus
from cronctl.store import open_store

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_a_killed_nodes_execution_is_recovered_by_another_node(tmp_path: Path,
                                                               postgres_url: str) -> None:
    project = Project(tmp_path, postgres_url)
    pids = tmp_path / "pids"
    project.jobs(f'''
[jobs.long]
every = "1s"
mode = "single_instance"
max_attempts = 3
command = ["sh", "-c", "echo $CRONCTL_OCCURRENCE_ID $$ >> {pids}; exec sleep 30"]
''')
    config_b = project.write_config("node-b", name="cronctl-b.toml")
    a = project.start("-v", log_name="a.log")  # each fire's own line
    b = None
    store = open_store(postgres_url, node_id="reader")
    try:
        assert a.wait_for(lambda t: "fired job=long" in t), a.text()
        b = project.start(config=config_b, log_name="b.log")
        assert b.wait_for(lambda t: "ready node=node-b" in t), b.text()
        [victim] = store.list_executions(job_id="long", limit=None)
        assert (victim.node_id, victim.status) == ("node-a", ExecutionStatus.RUNNING)
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(5)

        def recovered(_: str) -> bool:
            rows = store.executions_of_occurrence("long", victim.occurrence_id)
            return len(rows) == 2 and rows[1].status is ExecutionStatus.RUNNING

        # heartbeat_interval 1s: A expires 3 s after its last heartbeat
        assert b.wait_for(recovered, timeout=10), b.text()
        old, new = store.executions_of_occurrence("long", victim.occurrence_id)
        assert (old.id, old.status, old.attempt) == (victim.id, ExecutionStatus.LOST, 1)
        assert (new.node_id, new.attempt, new.scheduled_at) == ("node-b", 2,
                                                                 victim.scheduled_at)
        assert old.fencing_token is not None and new.fencing_token is not None
        assert new.fencing_token > old.fencing_token
        # nothing else ran meanwhile: B's own fires waited for the occurrence (overlap)
        assert len(store.list_executions(job_id="long", limit=None)) == 2
        assert b.wait_for(lambda t: f"recovered job=long exec={victim.id}" in t, 3), b.text()
    finally:
        store.close()
        if b is not None:
            assert b.stop() == 0, b.text()
        a.kill()
        if pids.exists():  # A's orphaned child
            for line in pids.read_text().splitlines():
                pid = int(line.split()[1])
                with contextlib.suppress(ProcessLookupError):
                    if pid_alive(pid):
                        os.killpg(pid, signal.SIGKILL)
