"""Dependents with real ``cronctl run`` processes (SPEC section 8): a chain runs each
planned instant once cluster-wide with two nodes (SQLite and PostgreSQL), and
``trigger --chain`` / ``replay --chain`` run the dependents of that occurrence."""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_run_support import Project, open_sqlite

from cronctl.store import open_store

pytestmark = pytest.mark.slow

CHAIN = ("extract", "transform", "load")


def _jobs(schedule: str, extract_mode: str = "single_instance") -> str:
    return f'''
[jobs.extract]
{schedule}
mode = "{extract_mode}"
command = ["true"]

[jobs.transform]
after = ["extract"]
command = ["sleep", "0.2"]

[jobs.load]
after = ["transform"]
command = ["true"]
'''


def _rows(project: Project) -> dict[str, list[Any]]:
    store = open_sqlite(project)
    try:
        return {job: store.list_executions(job_id=job, limit=None) for job in CHAIN}
    finally:
        store.close()


def _until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def _ended(project: Project, job: str, at: datetime) -> Callable[[], bool]:
    return lambda: any(r.scheduled_at == at and r.status.is_final
                       for r in _rows(project)[job])


def _in_order(rows: dict[str, list[Any]], at: datetime) -> None:
    ran = {job: [r for r in rows[job] if r.scheduled_at == at] for job in CHAIN}
    assert all(len(found) == 1 for found in ran.values()), ran
    first, second, third = (ran[job][0] for job in CHAIN)
    assert first.finished_at <= second.started_at and second.finished_at <= third.started_at
    assert {second.origin.value, third.origin.value} == {"dependency"}
    assert all(r.status.value == "succeeded" for r in (first, second, third))


def _two_nodes(project: Project) -> None:
    project.jobs(_jobs('every = "2s"'))
    config_b = project.write_config("node-b", name="cronctl-b.toml")
    a = project.start(log_name="a.log")
    b = project.start(config=config_b, log_name="b.log")
    try:
        assert a.wait_for(lambda t: "ready node=node-a" in t, 20), a.text()
        assert b.wait_for(lambda t: "ready node=node-b" in t, 20), b.text()
        time.sleep(8)
    finally:
        codes = (a.stop(), b.stop())
    assert codes == (0, 0), a.text()[-2000:] + b.text()[-2000:]
    rows = _rows(project)
    for job in CHAIN:
        per_instant = collections.Counter(r.scheduled_at for r in rows[job])
        assert per_instant and max(per_instant.values()) == 1, (job, per_instant)
    # every instant whose chain completed ran in order, once, on whichever nodes
    done = {r.scheduled_at for r in rows["load"]}
    assert len(done) >= 2, rows
    for at in done:
        _in_order(rows, at)
    nodes = {r.node_id for job in CHAIN for r in rows[job]}
    assert nodes <= {"node-a", "node-b"}


def test_chain_once_per_instant_with_two_nodes_on_sqlite(tmp_path: Path) -> None:
    _two_nodes(Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}"))


@pytest.mark.postgres
def test_chain_once_per_instant_with_two_nodes_on_postgresql(tmp_path: Path,
                                                              postgres_url: str) -> None:
    _two_nodes(Project(tmp_path, postgres_url))


def test_trigger_and_replay_with_chain(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(_jobs('cron = "0 0 0 1 1 *"'))  # yearly: nothing fires by itself
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready" in t.lower(), 15), run.text()
        done = project.cli("trigger", "extract", "--chain", "--wait", "--json")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert doc["chained"] == ["transform", "load"]
        at = datetime.fromisoformat(doc["execution"]["scheduled_at"].replace("Z", "+00:00"))
        assert _until(_ended(project, "load", at), 10), run.text()[-2000:]
        _in_order(_rows(project), at)
        # without --chain, only the job itself runs
        done = project.cli("trigger", "extract", "--wait")
        assert done.returncode == 0, done.stderr

        # replay offers nothing before a job was first scheduled: this one "has existed
        # since 2025" (its row says so), so its 2026-01-01 instant is there to replay
        import sqlite3

        from cronctl.store.reads import bind_instant

        with sqlite3.connect(tmp_path / "state.db") as db:
            db.execute("UPDATE job_schedules SET first_seen = ? WHERE job_id = 'extract'",
                       (bind_instant(datetime(2025, 1, 1, tzinfo=UTC), False),))
        replay = project.cli("replay", "extract", "--since", "2025-12-31T00:00:00Z",
                             "--until", "2026-01-02T00:00:00Z", "--chain", "--json")
        assert replay.returncode == 0, replay.stderr
        queued = json.loads(replay.stdout)["queued"]
        assert len(queued) == 1
        t = datetime.fromisoformat(queued[0]["scheduled_at"].replace("Z", "+00:00"))
        assert _until(_ended(project, "load", t), 10), run.text()[-2000:]
        _in_order(_rows(project), t)
        again = project.cli("replay", "extract", "--since", "2025-12-31T00:00:00Z",
                            "--until", "2026-01-02T00:00:00Z", "--chain", "--json")
        assert json.loads(again.stdout)["queued"] == []  # never twice
    finally:
        assert run.stop() == 0, run.text()[-2000:]
    rows = _rows(project)
    assert len(rows["extract"]) == 3 and len(rows["load"]) == 2, rows


def test_a_request_taken_by_a_node_that_stopped_runs_again(tmp_path: Path) -> None:
    """A node took a dependent's request and died before it wrote the execution row: a
    live node gives the request back and it runs, once."""
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(_jobs('cron = "0 0 0 1 1 *"'))
    t = datetime(2026, 1, 1, tzinfo=UTC)
    store = open_store(project.database, node_id="ghost")
    try:
        assert store.decide_dependent("transform", t, "ghost")
        [taken] = store.take_triggers("ghost", job_ids={"transform"})
        assert taken.taken_by == "ghost"
    finally:
        store.close()
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready" in t.lower(), 15), run.text()
        assert _until(_ended(project, "transform", t), 15), run.text()[-2000:]
        assert "took it and stopped before it ran; queued again" in run.text()
    finally:
        assert run.stop() == 0, run.text()[-2000:]
    [row] = _rows(project)["transform"]
    assert (row.scheduled_at, row.origin.value, row.status.value) == (
        t, "dependency", "succeeded")


def test_upstream_skips_reach_the_metrics(tmp_path: Path) -> None:
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    project.jobs(_jobs('every = "1s"').replace('command = ["true"]\n', 'command = ["false"]\n'
                                                 'max_attempts = 1\n', 1))
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready" in t.lower(), 15), run.text()
        assert _until(lambda: bool(_skips(project, "transform")), 10), run.text()[-2000:]
        time.sleep(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    finally:
        assert run.stop() == 0, run.text()[-2000:]
    counted = [line for line in text.splitlines() if line.startswith(
        'cronctl_skipped_total{job="transform",reason="upstream"}')]
    assert counted and float(counted[0].split()[-1]) >= 1, text[-3000:]


def _skips(project: Project, job: str) -> list[Any]:
    store = open_sqlite(project)
    try:
        return store.list_skips(job_id=job, limit=None)
    finally:
        store.close()


def test_why_says_waiting_while_the_parent_runs(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(_jobs('every = "10s"').replace('command = ["true"]',
                                                 'command = ["sleep", "8"]', 1))
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready" in t.lower(), 15), run.text()

        def running() -> list[Any]:
            return [r for r in _rows(project)["extract"] if r.status.value == "running"]

        assert _until(lambda: bool(running()), 15), run.text()[-2000:]
        at = running()[0].scheduled_at
        doc = json.loads(project.cli("why", "transform", at.isoformat(), "--json").stdout)
        z = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert (doc["outcome"], doc["reason"]) == ("pending", "upstream"), doc
        assert doc["detail"] == f"waiting on extract@{z} (running)", doc
        assert _until(_ended(project, "transform", at), 15), run.text()[-2000:]
        doc = json.loads(project.cli("why", "transform", at.isoformat(), "--json").stdout)
        assert doc["outcome"] == "ran", doc
    finally:
        assert run.stop() == 0, run.text()[-2000:]
