"""Issue 26, item 3: a node whose wall clock is ahead of the database server's
(PostgreSQL; SPEC section 4, "Clocks"). Real ``cronctl run`` processes, one of them with
its wall clock stepped by an LD_PRELOAD shim (``tests/clock_shim.c``).

A node ahead by more than ``clock_skew_limit`` refuses to start, writing nothing, and a
running one refuses to act; ahead by less it decides with the server's clock: no
instant fired early, none recorded missed while another node runs it. A cursor a skewed
node left in the database's future never locks out a node whose clock is right."""

from __future__ import annotations

import collections
import socket
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite
from wallclock import REAL_CLOCK_ENV, SteppedClock, build_shim

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _jobs(project: Project) -> Path:
    fires = project.root / "fires.log"
    project.jobs(f'''
[jobs.tick]
every = "1s"
mode = "single_instance"
env = {REAL_CLOCK_ENV}
command = ["sh", "-c", "echo $CRONCTL_SCHEDULED_AT $(date -u +%s.%N) >> {fires}"]
''')
    return fires


def _fires(path: Path) -> list[tuple[datetime, float]]:
    out = []
    for line in path.read_text().splitlines():
        planned, real = line.split()
        out.append((datetime.fromisoformat(planned.replace("Z", "+00:00")), float(real)))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_start_ahead_of_the_database_is_refused_and_writes_nothing(
        tmp_path: Path, postgres_url: str) -> None:
    project = Project(tmp_path, postgres_url)
    _jobs(project)
    assert project.cli("db", "upgrade").returncode == 0
    shim = build_shim(tmp_path)
    result = project.cli("run", timeout=30, LD_PRELOAD=str(shim), CLOCK_SHIM_OFFSET="400")
    assert result.returncode == 1, result.stderr
    assert "ahead of the database server's" in result.stderr, result.stderr
    assert "clock_skew_limit (0:05:00)" in result.stderr and "Traceback" not in result.stderr
    store = open_sqlite(project)
    try:
        assert store.live_nodes(datetime.now(UTC), timedelta(hours=1)) == []
        assert store.dead_nodes(datetime.now(UTC), timedelta(hours=1)) == []
        assert store.list_schedules() == []
    finally:
        store.close()


def test_a_node_stepped_ahead_neither_fires_early_nor_records_false_misfires(
        tmp_path: Path, postgres_url: str) -> None:
    """+90 s (under the 5 min limit: decides with the server's clock), then +400 s
    (over it: refuses to act, /healthz says so), then back; node B's clock is right."""
    project = Project(tmp_path, postgres_url)
    fires = _jobs(project)
    port = _free_port()
    config_a = project.write_config("node-a", name="cronctl-a.toml",
                                    extra=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    config_b = project.write_config("node-b", name="cronctl-b.toml")
    clock = SteppedClock(tmp_path, "a", build_shim(tmp_path))
    a = project.start(config=config_a, log_name="a.log", **clock.env())
    b = project.start(config=config_b, log_name="b.log")
    try:
        assert a.wait_for(lambda t: "ready node=node-a" in t), a.text()
        assert b.wait_for(lambda t: "ready node=node-b" in t), b.text()
        time.sleep(1.0)
        clock.set(90)
        time.sleep(2.0)
        clock.set(400)
        assert a.wait_for(lambda t: "refusing to act" in t, timeout=3), a.text()
        code, body = _healthz(port)
        assert code == 503 and "refusing to act (clock skew)" in body, (code, body)
        time.sleep(1.0)
        clock.set(0)
        assert a.wait_for(lambda t: "acting" in t.split("refusing to act", 1)[1],
                          timeout=3), a.text()
        assert _healthz(port)[0] == 200
        time.sleep(1.0)
    finally:
        codes = (a.stop(), b.stop())
    assert codes == (0, 0), a.text() + b.text()
    assert a.text().count("refusing to act") == 1, a.text()
    got = _fires(fires)
    early = [(p, real) for p, real in got if real < p.timestamp() - 0.05]
    assert got and early == [], early
    store = open_sqlite(project)
    try:
        rows = store.list_executions(job_id="tick", limit=None)
        skips = store.list_skips(job_id="tick")
    finally:
        store.close()
    assert skips == [], skips
    per_instant = collections.Counter(r.scheduled_at for r in rows)
    assert max(per_instant.values()) == 1 and {r.attempt for r in rows} == {1}, per_instant
    instants = sorted(per_instant)
    assert all(y - x == timedelta(seconds=1) for x, y in zip(instants, instants[1:],
                                                             strict=False)), instants


def test_a_right_node_starts_past_cursors_a_skewed_node_pushed_ahead(
        tmp_path: Path, postgres_url: str) -> None:
    project = Project(tmp_path, postgres_url)
    fires = _jobs(project)
    assert project.cli("db", "upgrade").returncode == 0
    store = open_sqlite(project)
    try:  # what a node 400 s ahead left behind before it was stopped
        store.advance_cursor("tick", datetime.now(UTC).replace(microsecond=0)
                             + timedelta(seconds=400))
    finally:
        store.close()
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=node-a" in t), run.text()
        time.sleep(2.5)
    finally:
        code = run.stop()
    assert code == 0, run.text()
    assert "job tick: its persisted cursor" in run.text(), run.text()
    assert len(_fires(fires)) >= 2, run.text()
