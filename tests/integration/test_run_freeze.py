"""A scheduler that is alive but frozen (SIGSTOP) on PostgreSQL (SPEC section 4): its
command ends before its lease can be taken over (the supervisor), another node takes the
attempt over and records it ``lost``, and the frozen node's final status, once it
wakes, is refused and kept beside the row (``fenced_status``)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest
from test_run_support import Project, Running, pid_alive

from cronctl.jobs.model import ExecutionStatus
from cronctl.runtime.supervision import limits, supervision_limit
from cronctl.store import open_store
from cronctl.store.liveness import LOCK_GRACE, restarting

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_limit_is_the_lease_minus_a_margin() -> None:
    assert supervision_limit(timedelta(seconds=15), 0.5) == 11.25
    assert supervision_limit(timedelta(seconds=3), 0.5) == 2.0
    assert supervision_limit(timedelta(seconds=1), 0.5) == 0.5  # never below one beat


def test_the_short_limits_fit_inside_the_others_graces() -> None:
    """docs/liveness.md: in doubt, a node ends its commands half a second before any peer
    may declare it dead; a SIGKILLed node is still known dead within 3 s."""
    default = limits(timedelta(seconds=15), 0.5)
    assert (default.ok, default.doubt, default.restart) == (11.25, 1.5, 4.5)
    assert default.doubt <= LOCK_GRACE.total_seconds() - 0.5
    assert LOCK_GRACE.total_seconds() + 0.5 + 0.5 <= 3.0  # last beat, check interval
    short = limits(timedelta(seconds=3), 0.5)
    assert (short.ok, short.doubt, short.restart) == (2.0, 1.5, 2.0)


def test_only_the_server_proves_a_restart() -> None:
    class Refused(Exception):
        sqlstate = "57P03"

    assert restarting(Refused("FATAL: the database system is starting up"))
    assert restarting(Exception('connection failed: FATAL:  the database system is '
                                'shutting down'))
    assert not restarting(Exception("connection refused"))
    assert not restarting(Exception("server closed the connection unexpectedly"))


def test_a_frozen_node_s_command_ends_before_its_attempt_is_taken_over(
        tmp_path: Path, postgres_url: str) -> None:
    project = Project(tmp_path, postgres_url)
    pids = project.root / "pids"
    project.jobs(f'''
[jobs.long]
every = "1s"
mode = "single_instance"
max_attempts = 3
command = ["sh", "-c", "echo $CRONCTL_EXECUTION_ID $$ >> {pids}; exec sleep 60"]
''')
    nodes: dict[str, Running] = {}
    for node in ("node-a", "node-b"):  # heartbeat_interval 1s: a lease (ttl) of 3 s
        config = project.write_config(node, name=f"{node}.toml")
        nodes[node] = project.start(config=config, log_name=f"{node}.log")
    store = open_store(project.database, node_id="reader")
    victim_run: Running | None = None
    try:
        for node, run in nodes.items():
            assert run.wait_for(lambda t, n=node: f"ready node={n}" in t), run.text()
        deadline = time.monotonic() + 10
        while not (rows := store.pending_or_running(job_ids=["long"])) or \
                not pids.exists() or not pids.read_text().strip():
            assert time.monotonic() < deadline, "nothing ran"
            time.sleep(0.05)
        [victim] = rows
        survivor = "node-b" if victim.node_id == "node-a" else "node-a"
        child = int(pids.read_text().split()[1])
        victim_run = nodes[victim.node_id]
        victim_run.proc.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        times: dict[str, float] = {}
        while len(times) < 2:
            now = time.monotonic() - frozen
            assert now < 15, (times, nodes[survivor].text())
            if "child" not in times and not pid_alive(child):
                times["child"] = now
            attempts = store.executions_of_occurrence("long", victim.occurrence_id)
            if "taken_over" not in times and len(attempts) == 2:
                times["taken_over"] = now
            time.sleep(0.02)
        print("freeze timings (s after SIGSTOP):", {k: round(v, 2) for k, v in times.items()})
        # the command ended before the next attempt could start beside it
        assert times["child"] < times["taken_over"], times
        old, new = store.executions_of_occurrence("long", victim.occurrence_id)
        assert (old.id, old.status) == (victim.id, ExecutionStatus.LOST)
        assert new.node_id == survivor and new.fencing_token > (old.fencing_token or 0)
        # the frozen node wakes up: its child's end is refused and kept beside the row
        victim_run.proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 10
        while (row := store.get_execution(victim.id)) is not None and row.fenced_status is None:
            assert time.monotonic() < deadline, victim_run.text()
            time.sleep(0.05)
        assert row is not None and row.status is ExecutionStatus.LOST
        assert row.fenced_status is ExecutionStatus.FAILED and row.fenced_at is not None
        # (its log lines follow the row's write: wait for them, not only for the row)
        assert victim_run.wait_for(lambda t: "fenced: job=long" in t and
                                   "killed by SIGKILL from the supervisor" in t,
                                   timeout=10), victim_run.text()
    finally:
        store.close()
        if victim_run is not None and victim_run.proc.poll() is None:
            victim_run.proc.send_signal(signal.SIGCONT)
        for run in nodes.values():
            if run.proc.poll() is None:
                run.stop()
        if pids.exists():
            for line in pids.read_text().splitlines():
                with contextlib.suppress(ProcessLookupError):
                    if pid_alive(int(line.split()[1])):
                        os.killpg(int(line.split()[1]), signal.SIGKILL)
