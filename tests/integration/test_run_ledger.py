"""The skip ledger and per-node cursors with real ``cronctl run`` processes (SPEC section 4):
every planned instant of a tracked job ends with an execution or a skip record, and an
every_instance job catches up from each node's own cursor."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

pytestmark = pytest.mark.slow

S = timedelta(seconds=1)

SOLO = '''
[jobs.solo]
every = "1s"
mode = "single_instance"
command = ["sleep", "2.5"]
'''

EVERY = '''
[jobs.each]
every = "1s"
misfire_policy = "fire_all"
catchup_limit = 100
command = ["true"]
'''


def _accounting(project: Project, job: str) -> tuple[set[datetime], dict[datetime, int],
                                                     datetime | None]:
    store = open_sqlite(project)
    try:
        ran = {r.scheduled_at for r in store.list_executions(job_id=job, limit=None)}
        skipped: dict[datetime, int] = {}
        for run in store.list_skips(job_id=job, limit=None):
            at = run.first_at
            for _ in range(run.count):
                skipped[at] = skipped.get(at, 0) + 1
                at += S
        state = store.get_schedule(job)
        return ran, skipped, None if state is None else state.cursor
    finally:
        store.close()


def test_overlap_skips_of_two_nodes_are_recorded_once(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(SOLO)
    b_config = project.write_config("node-b", name="b.toml")
    a = project.start(log_name="a.log")
    b = project.start(config=b_config, log_name="b.log")
    try:
        assert a.wait_for(lambda t: "ready" in t.lower(), 15)
        time.sleep(7)
    finally:
        assert a.stop() == 0 and b.stop() == 0
    ran, skipped, cursor = _accounting(project, "solo")
    assert ran and cursor is not None
    assert "overlap" in {r.reason for r in _runs(project, "solo")}
    assert all(n == 1 for n in skipped.values()), skipped  # once cluster-wide
    first = min(ran)
    instants = [first + k * S for k in range(int((cursor - first) / S) + 1)]
    unaccounted = [t for t in instants if t not in ran and t not in skipped]
    assert unaccounted == [], (unaccounted, a.text()[-2000:])


def _runs(project: Project, job: str):  # type: ignore[no-untyped-def]
    store = open_sqlite(project)
    try:
        return store.list_skips(job_id=job, limit=None)
    finally:
        store.close()


def test_every_instance_catch_up_uses_each_nodes_own_cursor(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(EVERY)
    b_config = project.write_config("node-b", name="b.toml")
    for _round in range(2):
        a = project.start(log_name="a.log")
        assert a.wait_for(lambda t: "ready" in t.lower(), 15)
        b = project.start(config=b_config, log_name="b.log")
        assert b.wait_for(lambda t: "ready" in t.lower(), 15)
        time.sleep(2.5)
        assert a.stop() == 0 and b.stop() == 0
        time.sleep(4)  # both down: each node must catch up its own instants
    store = open_sqlite(project)
    try:
        rows = store.list_executions(job_id="each", limit=None)
        skips = store.list_skips(job_id="each", limit=None)
    finally:
        store.close()
    # Each node accounts for every instant from its first to its last on its own: its
    # executions plus the skips in its scope (catch-up fires that overlapped each other).
    by_node: dict[str, set[datetime]] = {}
    for r in rows:
        by_node.setdefault(r.node_id, set()).add(r.scheduled_at)
    assert set(by_node) == {"node-a", "node-b"}
    for run in skips:
        assert run.scope_node in by_node
        by_node[run.scope_node].update(run.first_at + k * S for k in range(run.count))
    for node, instants in by_node.items():
        first, last = min(instants), max(instants)
        gaps = [first + k * S for k in range(int((last - first) / S) + 1)
                if first + k * S not in instants]
        assert gaps == [], (node, gaps)
