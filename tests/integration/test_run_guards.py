"""Cluster-wide guards across two ``cronctl run`` nodes sharing one database (SPEC
sections 2 and 4): a serial group never runs two executions at once, nor does a
single_instance job with overlap ``skip``; a gracefully stopped node's pending
single_instance retry is run by the node that is left."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl.jobs.model import ExecutionStatus
from cronctl.store.base import ExecutionRecord

pytestmark = pytest.mark.slow

GROUP = '''
[jobs.first]
every = "1s"
serial_group = "nightly"
command = ["sleep", "0.7"]

[jobs.second]
every = "1s"
serial_group = "nightly"
command = ["sleep", "0.7"]
'''

SOLO = '''
[jobs.solo]
every = "1s"
mode = "single_instance"
command = ["sleep", "2.5"]
'''

FLAKY = '''
[jobs.flaky]
every = "1h"
mode = "single_instance"
command = ["sh", "-c", "exit 3"]
max_attempts = 2
retry_backoff = "3s"
'''


def _rows(project: Project, *job_ids: str) -> list[ExecutionRecord]:
    store = open_sqlite(project)
    try:
        return [r for j in job_ids for r in store.list_executions(job_id=j, limit=None)]
    finally:
        store.close()


def _run_two(project: Project, seconds: float) -> None:
    config_b = project.write_config("node-b", name="cronctl-b.toml")
    a = project.start(log_name="a.log")
    b = project.start(config=config_b, log_name="b.log")
    try:
        assert a.wait_for(lambda t: "ready node=node-a" in t), a.text()
        assert b.wait_for(lambda t: "ready node=node-b" in t), b.text()
        time.sleep(seconds)
    finally:
        codes = (a.stop(), b.stop())
    assert codes == (0, 0), a.text() + b.text()


def _assert_no_overlap(rows: list[ExecutionRecord]) -> None:
    ran = sorted((r.started_at, r.finished_at, r.job_id, r.node_id) for r in rows
                 if r.started_at is not None and r.status is not ExecutionStatus.PENDING)
    assert all(end is not None for _, end, _, _ in ran), ran
    for earlier, later in zip(ran, ran[1:], strict=False):
        assert earlier[1] is not None and earlier[1] <= later[0], (earlier, later)


def _serial_group(project: Project) -> None:
    project.jobs(GROUP)
    _run_two(project, 5.0)
    rows = _rows(project, "first", "second")
    done = [r for r in rows if r.status is ExecutionStatus.SUCCEEDED]
    assert len(done) >= 4, rows
    _assert_no_overlap(rows)


def _single_instance(project: Project) -> None:
    project.jobs(SOLO)
    _run_two(project, 6.0)
    rows = _rows(project, "solo")
    assert len([r for r in rows if r.status is ExecutionStatus.SUCCEEDED]) >= 1, rows
    _assert_no_overlap(rows)


def test_serial_group_cluster_wide_on_sqlite(tmp_path: Path) -> None:
    _serial_group(Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}"))


@pytest.mark.postgres
def test_serial_group_cluster_wide_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    _serial_group(Project(tmp_path, postgres_url))


def test_single_instance_never_overlaps_on_sqlite(tmp_path: Path) -> None:
    _single_instance(Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}"))


@pytest.mark.postgres
def test_single_instance_never_overlaps_on_postgresql(tmp_path: Path,
                                                      postgres_url: str) -> None:
    _single_instance(Project(tmp_path, postgres_url))


@pytest.mark.postgres
def test_stopped_node_hands_its_pending_retry_to_the_cluster(tmp_path: Path,
                                                             postgres_url: str) -> None:
    project = Project(tmp_path, postgres_url)
    project.jobs(FLAKY)
    config_b = project.write_config("node-b", name="cronctl-b.toml")
    a = project.start(log_name="a.log")
    b = None
    try:
        assert a.wait_for(lambda t: "ready node=node-a" in t), a.text()
        assert project.cli("trigger", "flaky").returncode == 0
        assert a.wait_for(lambda t: "retry scheduled job=flaky attempt=2" in t), a.text()
        b = project.start(config=config_b, log_name="b.log")
        assert b.wait_for(lambda t: "ready node=node-b" in t), b.text()
    finally:
        assert a.stop() == 0, a.text()
    try:
        [pending] = [r for r in _rows(project, "flaky") if r.status is ExecutionStatus.PENDING]
        assert pending.attempt == 2 and pending.node_id == "node-a"
        assert b.wait_for(lambda _: _rows(project, "flaky")[0].status
                          is ExecutionStatus.DEAD_LETTER, timeout=8), b.text()
    finally:
        assert b.stop() == 0, b.text()
    [second] = [r for r in _rows(project, "flaky") if r.attempt == 2]
    assert second.node_id == "node-b" and second.status is ExecutionStatus.DEAD_LETTER


BLOCKER = '''
[jobs.blocker]
cron = "*/5 * * * * *"
serial_group = "g"
command = ["sleep", "4.8"]
'''

LATE = '''
[jobs.late]
cron = "2/5 * * * * *"
serial_group = "g"
command = ["true"]
'''


def _cluster_serial_group_is_fifo(project: Project) -> None:
    """Issue 9, finding 8, across nodes: ``blocker`` (node A only) holds group ``g`` for
    4.8 s of every 5; ``late`` (node B only) is due 2 s into each run. The group is free
    for 0.2 s at a time, and node A asks for it again on the next instant: a freed group
    must go to its oldest waiter, so ``late`` runs once per cycle, not never."""
    (project.root / "b.d").mkdir()
    (project.root / "b.d" / "late.toml").write_text(LATE)
    project.jobs(BLOCKER)
    config_b = project.write_config("node-b", name="cronctl-b.toml")
    config_b.write_text(config_b.read_text().replace(
        str(project.root / "jobs.d"), str(project.root / "b.d")))
    a = project.start(log_name="a.log")
    b = project.start(config=config_b, log_name="b.log")
    try:
        assert a.wait_for(lambda t: "ready node=node-a" in t), a.text()
        assert b.wait_for(lambda t: "ready node=node-b" in t), b.text()
        time.sleep(17.0)
    finally:
        codes = (a.stop(), b.stop())
    assert codes == (0, 0), a.text() + b.text()
    rows = _rows(project, "blocker", "late")
    _assert_no_overlap(rows)
    late = [r for r in rows if r.job_id == "late" and r.status is ExecutionStatus.SUCCEEDED]
    blocker = [r for r in rows if r.job_id == "blocker"
               and r.status is ExecutionStatus.SUCCEEDED]
    # ~3 cycles: late gets the group in each (allow one lost to start-up timing).
    assert len(late) >= 2 and len(blocker) >= 2, (late, blocker)
    # Each waited for one blocker run (which ends 2.8 s after late's instant), never for a
    # whole cycle more (7.8 s): the bound is halfway, as a loaded machine delays the start
    # of the blocker and the hand-off (4.1 s was seen in CI).
    for r in late:
        assert r.started_at is not None
        assert r.started_at - r.scheduled_at < timedelta(seconds=5.3), r


def test_a_freed_serial_group_goes_to_the_oldest_waiter_across_nodes_on_sqlite(
        tmp_path: Path) -> None:
    _cluster_serial_group_is_fifo(Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}"))


@pytest.mark.postgres
def test_a_freed_serial_group_goes_to_the_oldest_waiter_across_nodes_on_postgresql(
        tmp_path: Path, postgres_url: str) -> None:
    _cluster_serial_group_is_fifo(Project(tmp_path, postgres_url))


HANDOFF = '''
[jobs.a]
cron = "*/2 * * * * *"
serial_group = "g"
command = ["sleep", "1"]

[jobs.b]
cron = "*/2 * * * * *"
serial_group = "g"
command = ["true"]
'''


def test_a_serial_group_is_handed_to_the_local_waiter_when_it_frees(tmp_path: Path) -> None:
    """The waiter of a group (same node) starts as the holder's final status is written,
    not one blocked-retry interval (500 ms) later: before, the waiter's first try found
    the lock still held by the execution that had just ended (its final status was still
    queued for the I/O thread)."""
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(HANDOFF)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t), run.text()
        time.sleep(7.0)
    finally:
        assert run.stop() == 0, run.text()
    by_instant: dict[object, list[ExecutionRecord]] = {}
    for r in _rows(project, "a", "b"):
        by_instant.setdefault(r.scheduled_at, []).append(r)
    gaps = []
    for pair in by_instant.values():
        if len(pair) == 2 and all(r.finished_at is not None for r in pair):
            first, second = sorted(pair, key=lambda r: r.started_at or r.scheduled_at)
            assert first.finished_at is not None and second.started_at is not None
            gaps.append((second.started_at - first.finished_at).total_seconds())
    assert len(gaps) >= 2, by_instant
    assert max(gaps) < 0.3, gaps
