"""Fault injection: the SQLite file deleted under running nodes (issue 26, item 4).

Two ``cronctl run`` nodes share single_instance jobs firing every second on one SQLite
file. In a loop the file is deleted (as ``rm state.db`` would: its ``-wal`` and ``-shm``
stay), one node is SIGKILLed and started again at once (while the other may still hold
the deleted file), every node must stop by itself (exit 1, one ERROR) within 10 s, and
then both start again on a new database.

The audit trusts the commands' own log as well as the database: 0 instants run twice
(a first attempt started twice, or two attempts that ran to their end: an attempt cut
short by the SIGKILL of its node is recovered as ``lost`` and run again, by design),
0 runs of one job at the same time, every node that should get ready did (none locked
out), and in the database left at the end every instant from its first fire to its last
has an execution or a skip record, with 0 ``misfire`` records for instants that ran and
``integrity_check`` ok.

``make test`` runs a short round (``CRONCTL_CHAOS_SECONDS``, default 6 here); ``make
chaos`` a long one. The figures are printed (``pytest -s``)."""

from __future__ import annotations

import collections
import os
import sqlite3
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_chaos import Cluster, Node, _ready

from cronctl.store import open_store

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(1800)]

SECONDS = float(os.environ.get("CRONCTL_CHAOS_SECONDS", "6"))
NODES = ("n1", "n2")
JOBS = ("f1", "f2", "f3")
RUN = 0.3  # seconds each command runs
STOP_WITHIN = 10.0  # a node on a deleted file stops by itself within this


def _jobs(fires: Path) -> str:
    rec = (f'echo "$1 $CRONCTL_JOB_ID $CRONCTL_SCHEDULED_AT $CRONCTL_ATTEMPT $(date +%s.%N)" '
           f'>> {fires}')
    return "".join(
        f'[jobs.{j}]\nevery = "1s"\nmode = "single_instance"\nshell = true\n'
        f'command = \'rec() {{ {rec}; }}; rec S; sleep {RUN}; rec E\'\n\n' for j in JOBS)


def _exited(cluster: Cluster, name: str, timeout: float) -> int | None:
    proc = cluster.nodes[name].proc
    assert proc is not None
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def _log(cluster: Cluster, name: str) -> str:
    node = cluster.nodes[name]
    return (cluster.root / f"{name}.{node.starts}.log").read_text(errors="replace")


def _round(cluster: Cluster, db: Path, stats: collections.Counter[str]) -> None:
    time.sleep(2.5)
    db.unlink()
    deleted = time.monotonic()
    # a restart right after: it must not make a second database beside the deleted one
    # while the other node still uses it (it refuses: exit 1), or, once nobody does,
    # it makes the new one
    cluster.kill("n2")
    cluster.start("n2")
    code = _exited(cluster, "n1", STOP_WITHIN)
    assert code == 1, _log(cluster, "n1")[-3000:]
    # It sees the path empty, or (if its connection was dropped when SQLite refused its
    # writes to the unlinked file, so the restarted n2 found no holder) the new file there.
    noticed = _log(cluster, "n1")
    assert "was deleted" in noticed or "was replaced" in noticed, noticed[-3000:]
    stats["saw_new_file"] += "was replaced" in noticed
    stats["stopped"] += 1
    stats["stop_s_max"] = max(stats["stop_s_max"], round(time.monotonic() - deleted, 2))
    n2 = _exited(cluster, "n2", 3.0)
    if n2 == 1:
        assert "still uses it" in _log(cluster, "n2") or "was deleted" in _log(cluster, "n2")
        stats["restart_refused"] += 1
    else:
        assert n2 is None, _log(cluster, "n2")[-3000:]
        stats["restart_made_new_db"] += 1
    for name in NODES:
        proc = cluster.nodes[name].proc
        if proc is None or proc.poll() is not None:
            cluster.start(name)
            assert _ready(cluster, name, 20), _log(cluster, name)[-3000:]
    stats["rounds"] += 1


Instant = tuple[str, datetime]


def _fires(path: Path) -> tuple[dict[Instant, list[int]], dict[Instant, int],
                                dict[str, list[tuple[float, float]]]]:
    """Per instant the attempt numbers started and how many attempts ran to their end;
    per job the (start, latest end) of each attempt."""
    starts: dict[Instant, list[int]] = collections.defaultdict(list)
    ends: dict[Instant, int] = collections.Counter()
    spans: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for line in path.read_text().splitlines():
        kind, job, planned, attempt, at = line.split()
        when = datetime.fromisoformat(planned.replace("Z", "+00:00"))
        if kind == "S":
            starts[(job, when)].append(int(attempt))
            spans[job].append((float(at), float(at) + RUN))  # ends by then, or was killed
        else:
            ends[(job, when)] += 1
    return starts, ends, spans


def test_chaos_deleted_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    fires = tmp_path / "fires.log"
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "handlers").mkdir()
    (tmp_path / "jobs.d" / "jobs.toml").write_text(_jobs(fires))
    url = f"sqlite:///{db}"
    cluster = Cluster(tmp_path, url)
    for name in NODES:
        config = tmp_path / f"{name}.toml"
        config.write_text(f'[scheduler]\ndatabase = "{url}"\njobs_dir = "{tmp_path / "jobs.d"}"\n'
                          f'node_id = "{name}"\nheartbeat_interval = "1s"\n'
                          'shutdown_timeout = "3s"\n')
        cluster.nodes[name] = Node(name, config)
        cluster.start(name)
        assert _ready(cluster, name), _log(cluster, name)[-3000:]
    stats: collections.Counter[str] = collections.Counter()
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline or stats["rounds"] < 1:
            _round(cluster, db, stats)
        time.sleep(2.5)
    finally:
        codes = cluster.stop_all()
    assert set(codes.values()) == {0}, codes
    logs = "".join((tmp_path / f).read_text(errors="replace")
                   for f in os.listdir(tmp_path) if f.endswith(".log") and f[0] == "n")
    assert "Traceback" not in logs

    starts, ends, spans = _fires(fires)
    twice = [k for k, v in starts.items() if len(v) != len(set(v)) or ends[k] > 1]
    concurrent = []
    for job, s in spans.items():
        s.sort()
        concurrent += [(job, a, b) for a, b in zip(s, s[1:], strict=False) if b[0] < a[1] - 0.01]
    check = sqlite3.connect(db)
    try:
        integrity = check.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        check.close()
    store = open_store(url, node_id="audit")
    try:
        rows = [r for j in JOBS for r in store.list_executions(job_id=j, limit=None)]
        skips = [s for j in JOBS for s in store.list_skips(job_id=j, limit=None)]
    finally:
        store.close()
    covered: dict[str, set[datetime]] = collections.defaultdict(set)
    for r in rows:
        covered[r.job_id].add(r.scheduled_at)
    false_skips = []
    for s in skips:
        t = s.first_at
        while t <= s.last_at:
            covered[s.job_id].add(t)
            if s.reason == "misfire" and (s.job_id, t) in starts:
                false_skips.append((s.job_id, t))
            t += timedelta(seconds=1)
    gaps = []
    for j in JOBS:
        mine = sorted(covered[j])
        gaps += [(j, a, b) for a, b in zip(mine, mine[1:], strict=False)
                 if b - a != timedelta(seconds=1)]
    ran_last_db = sum(1 for r in rows if r.started_at is not None)
    print(f"\nlost-file chaos {SECONDS:.0f}s: {dict(stats)}; {len(starts)} instants ran "
          f"({ran_last_db} in the last database, {len(skips)} skip records, "
          f"{sum(1 for v in starts.values() if len(v) > 1)} run again after a kill), twice "
          f"{len(twice)}, concurrent {len(concurrent)}, gaps {len(gaps)}, false skips "
          f"{len(false_skips)}, integrity {integrity}")
    assert twice == [] and concurrent == [] and gaps == [] and false_skips == [], (
        twice, concurrent, gaps, false_skips)
    assert integrity == "ok"
    assert rows and datetime.now(UTC) - max(r.scheduled_at for r in rows) < timedelta(seconds=30)
