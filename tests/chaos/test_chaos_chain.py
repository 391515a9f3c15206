"""Fault injection for dependents (SPEC section 8): an extract -> transform -> load
chain (extract every second, single_instance) on three ``cronctl run`` nodes sharing one
database (SQLite, and a private PostgreSQL server), a node SIGKILLed and restarted every
few seconds (the rotation of :mod:`test_chaos`).

The audit: every planned instant of extract has an execution or a skip record; each
dependent has at most one first attempt per instant cluster-wide and never both an
execution and a skip record; every instant whose parent ended long enough before the
stop is decided (ran, or skipped with reason upstream); a dependent never started before
its parent's handler had finished (the handlers' own log, not only the database)."""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_chaos import HANDLERS, KILL_EVERY, NODES, SECONDS, Cluster, Node, _ready

from cronctl.jobs.model import ExecutionStatus
from cronctl.store import open_store

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(1800)]

CHAIN = ("extract", "transform", "load")
JOBS = '''
[jobs.extract]
every = "1s"
mode = "single_instance"
target = "python:chaos_handlers:quick"

[jobs.transform]
after = ["extract"]
target = "python:chaos_handlers:quick"

[jobs.load]
after = ["transform:any"]
target = "python:chaos_handlers:quick"
'''


def _handler_spans(root: Path) -> dict[tuple[str, int], tuple[float, float]]:
    """(job, planned epoch second) -> (first start, last end) from the handlers' log."""
    spans: dict[tuple[str, int], list[float]] = {}
    log = root / "handlers.log"
    for line in (log.read_text().splitlines() if log.exists() else []):
        parts = line.split()
        if len(parts) < 7:
            continue
        kind, job, planned, _attempt, _node, _pid, at = parts[:7]
        key = (job, round(float(planned)))
        span = spans.setdefault(key, [float("inf"), float("-inf")])
        if kind == "S":
            span[0] = min(span[0], float(at))
        else:
            span[1] = max(span[1], float(at))
    return {k: (v[0], v[1]) for k, v in spans.items()}


def run_chain_chaos(root: Path, url: str) -> dict[str, Any]:
    (root / "jobs.d").mkdir(parents=True)
    (root / "handlers").mkdir()
    (root / "handlers" / "chaos_handlers.py").write_text(HANDLERS)
    (root / "jobs.d" / "chain.toml").write_text(JOBS)
    cluster = Cluster(root, url)
    for name in NODES:
        config = root / f"{name}.toml"
        config.write_text(
            "[scheduler]\n"
            f'database = "{url}"\njobs_dir = "{root / "jobs.d"}"\nnode_id = "{name}"\n'
            'heartbeat_interval = "1s"\nshutdown_timeout = "5s"\n'
            'progress_flush_interval = "1s"\n')
        cluster.nodes[name] = Node(name, config)
    rng = random.Random(int(os.environ.get("CRONCTL_CHAOS_SEED", "11")))
    for name in NODES:
        cluster.start(name)
        assert _ready(cluster, name), (root / f"{name}.1.log").read_text()[-3000:]
    began = datetime.now(UTC)
    deadline = time.monotonic() + SECONDS
    try:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(*KILL_EVERY))
            victim = rng.choice(NODES)
            cluster.kill(victim)
            cluster.start(victim)
            assert _ready(cluster, victim), "a restarted node did not get ready"
        ended = datetime.now(UTC)
        time.sleep(3)  # the last instants' chains finish
    finally:
        codes = cluster.stop_all()
    store = open_store(url, node_id="chaos-observer")
    try:
        rows = {job: store.list_executions(job_id=job, limit=None) for job in CHAIN}
        skips = {job: store.list_skips(job_id=job, limit=None) for job in CHAIN}
    finally:
        store.close()
    return audit(root, rows, skips, began, ended, codes)


def audit(root: Path, rows: dict[str, list[Any]], skips: dict[str, list[Any]],
          began: datetime, ended: datetime, codes: dict[str, int]) -> dict[str, Any]:
    second = timedelta(seconds=1)
    skipped: dict[str, dict[datetime, str]] = {job: {} for job in CHAIN}
    double_skips = 0
    for job in CHAIN:
        for s in skips[job]:
            at = s.first_at
            for _ in range(s.count):
                double_skips += at in skipped[job]
                skipped[job][at] = s.reason
                at += second
    first_attempts: dict[str, dict[datetime, int]] = {job: defaultdict(int) for job in CHAIN}
    for job in CHAIN:
        for r in rows[job]:
            if r.attempt == 1:
                first_attempts[job][r.scheduled_at] += 1
    duplicated = sum(n > 1 for job in CHAIN for n in first_attempts[job].values())
    ran_and_skipped = sum(at in skipped[job] for job in CHAIN for at in first_attempts[job])
    # every extract instant in the window, and the dependents of every instant whose
    # extract ended (final) at least 3 s before the stop, are accounted for
    t = began.replace(microsecond=0) + 2 * second
    planned = unaccounted = 0
    missing: list[str] = []
    final = {r.scheduled_at for r in rows["extract"] if r.status.is_final and (
        r.status is not ExecutionStatus.FAILED)}
    while t <= ended - second:
        planned += 1
        for job in CHAIN:
            if job != "extract" and (t not in final and t not in skipped["extract"]):
                continue
            if t not in first_attempts[job] and t not in skipped[job]:
                unaccounted += 1
                missing.append(f"{job}@{t:%H:%M:%S}")
        t += second
    spans = _handler_spans(root)
    out_of_order: list[str] = []
    for (job, at), (start, _end) in spans.items():
        if job == "extract":
            continue
        parent = "extract" if job == "transform" else "transform"
        parent_end = spans.get((parent, at), (0.0, float("inf")))[1]
        if start < parent_end - 0.01:
            out_of_order.append(f"{job}@{at} started {start:.2f} < {parent} end "
                                f"{parent_end:.2f}")
    reasons: dict[str, int] = defaultdict(int)
    for job in CHAIN:
        for reason in skipped[job].values():
            reasons[f"{job}:{reason}"] += 1
    return {
        "seconds": SECONDS, "planned": planned,
        "executed": {job: len(rows[job]) for job in CHAIN}, "skipped": dict(reasons),
        "unaccounted": unaccounted, "missing_sample": missing[:10],
        "duplicated": duplicated, "ran_and_skipped": ran_and_skipped,
        "double_skips": double_skips, "out_of_order": len(out_of_order),
        "out_of_order_sample": out_of_order[:5], "exit_codes": codes,
    }


def _check(figures: dict[str, Any], db: str) -> None:
    print(f"\nchain chaos {db}: {figures}")
    assert figures["executed"]["load"] > 0, figures
    for key in ("unaccounted", "duplicated", "ran_and_skipped", "double_skips",
                "out_of_order"):
        assert figures[key] == 0, figures
    assert all(code == 0 for code in figures["exit_codes"].values()), figures


def test_chain_chaos_sqlite(tmp_path: Path) -> None:
    _check(run_chain_chaos(tmp_path, f"sqlite:///{tmp_path / 'state.db'}"), "sqlite")


def test_chain_chaos_postgresql(tmp_path: Path) -> None:
    from private_pg import PrivatePostgres

    try:
        server = PrivatePostgres(tmp_path / "pg")
    except RuntimeError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"PostgreSQL server binaries required in CI: {exc}")
        pytest.skip(str(exc))
    server.start()
    try:
        figures = run_chain_chaos(tmp_path / "run", server.url)
    finally:
        server.stop()
    _check(figures, "postgresql")
