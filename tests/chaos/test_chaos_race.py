"""Cancel and trigger racing a SIGKILL: two ``cronctl run`` nodes on one database. In a
loop, a running manual execution gets a cancel request and its node is SIGKILLed (its
whole process group) a few milliseconds later; or a trigger request's taker is SIGKILLed
as soon as it took it. The killed node restarts at once.

The audit: no occurrence ran twice; no two attempts of one job ran at the same time
(single_instance; the handlers' own log, a killed attempt ending at its kill); every
execution with a cancel request ended ``cancelled`` (or ``succeeded`` first) and none
was followed by another attempt; every trigger request ended with exactly one execution.

``make test`` runs a short round (``CRONCTL_CHAOS_SECONDS``, default 6 here); ``make
chaos`` a long one. The figures are printed (``pytest -s``)."""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from test_chaos import SETTING, Cluster, Node, _ready

from cronctl.jobs.model import ExecutionStatus
from cronctl.store import Store, open_store

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(1800)]

SECONDS = float(os.environ.get("CRONCTL_CHAOS_SECONDS", "6"))
NODES = ("n1", "n2")
JOBS = ("race-0", "race-1", "race-2")

HANDLERS = SETTING + '''
import time

LOG = _setting("CRONCTL_CHAOS_LOG")
# the scheduler's pid, which the audit matches with its kills (see test_chaos.HANDLERS)
SCHEDULER = os.getpid() if "CRONCTL_CHAOS_LOG" in os.environ else os.getppid()


def _rec(kind, ctx):
    line = (f"{kind} {ctx.job_id} {ctx.occurrence_id} {ctx.attempt} {SCHEDULER} "
            f"{time.time():.6f}\\n")
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def hold(ctx):
    _rec("S", ctx)
    end = time.monotonic() + 1.5
    while time.monotonic() < end and not ctx.is_cancelled():
        time.sleep(0.02)
    _rec("E", ctx)
'''


def _jobs() -> str:
    return "\n".join(f'[jobs.{job}]\ncron = "0 0 3 1 1 *"\nmode = "single_instance"\n'
                     'target = "python:chaos_handlers:hold"\nmax_attempts = 3\n'
                     'retry_backoff = "1s"\n' for job in JOBS)


def _until(predicate: Any, timeout: float, step: float = 0.005) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(step)
    return None


def _restart(cluster: Cluster, name: str) -> None:
    cluster.kill(name)
    cluster.start(name)
    assert _ready(cluster, name), "a restarted node did not get ready"


def _cancel_race(cluster: Cluster, store: Store, job: str, rng: random.Random,
                 cancelled: list[int]) -> None:
    store.enqueue_trigger(job)
    row = _until(lambda: next((r for r in store.pending_or_running(job_ids=[job])
                               if r.status is ExecutionStatus.RUNNING), None), 8)
    if row is None:
        return
    time.sleep(rng.uniform(0.0, 0.3))
    if store.request_cancel(row.id):
        cancelled.append(row.id)
    time.sleep(rng.uniform(0.0, 0.05))
    _restart(cluster, row.node_id)


def _trigger_race(cluster: Cluster, store: Store, job: str) -> None:
    rid = store.enqueue_trigger(job)
    assert rid is not None
    taken = _until(lambda: getattr(store.get_trigger(rid), "taken_by", None), 8, 0.002)
    if taken in cluster.nodes:
        _restart(cluster, taken)


def _spans(root: Path, kills: list[tuple[str, int, float]]
           ) -> dict[str, list[tuple[str, int, float, float]]]:
    """job -> [(occurrence, attempt, start, end)]; an attempt whose end was never written
    ended when its scheduler was killed."""
    killed_at = {pid: at for _node, pid, at in kills}
    starts: dict[tuple[str, str, int, int], float] = {}
    ends: dict[tuple[str, str, int, int], float] = {}
    log = root / "handlers.log"
    for line in (log.read_text().splitlines() if log.exists() else []):
        kind, job, occurrence, attempt, pid, at = line.split()
        key = (job, occurrence, int(attempt), int(pid))
        (starts if kind == "S" else ends)[key] = float(at)
    out: dict[str, list[tuple[str, int, float, float]]] = defaultdict(list)
    for key, start in starts.items():
        out[key[0]].append((key[1], key[2], start,
                            ends.get(key, killed_at.get(key[3], float("inf")))))
    return out


def run_race(root: Path, url: str) -> dict[str, Any]:
    (root / "jobs.d").mkdir(parents=True)
    (root / "handlers").mkdir()
    (root / "handlers" / "chaos_handlers.py").write_text(HANDLERS)
    (root / "jobs.d" / "race.toml").write_text(_jobs())
    cluster = Cluster(root, url)
    for name in NODES:
        config = root / f"{name}.toml"
        config.write_text(
            "[scheduler]\n"
            f'database = "{url}"\njobs_dir = "{root / "jobs.d"}"\nnode_id = "{name}"\n'
            'heartbeat_interval = "1s"\nshutdown_timeout = "5s"\n'
            'progress_flush_interval = "1s"\n')
        cluster.nodes[name] = Node(name, config)
    rng = random.Random(int(os.environ.get("CRONCTL_CHAOS_SEED", "13")))
    for name in NODES:
        cluster.start(name)
        assert _ready(cluster, name), (root / f"{name}.1.log").read_text()[-3000:]
    store = open_store(url, node_id="chaos-observer")
    cancelled: list[int] = []
    rounds = 0
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline or rounds < 2:
            job = JOBS[rounds % len(JOBS)]
            if rounds % 2 == 0:
                _cancel_race(cluster, store, job, rng, cancelled)
            else:
                _trigger_race(cluster, store, job)
            rounds += 1
        # every request and execution settles (a retry after its backoff included)
        _until(lambda: not store.pending_or_running(job_ids=list(JOBS)) and all(
            r.done for r in _requests(store)), 30, 0.2)
    finally:
        codes = cluster.stop_all()
    try:
        return audit(root, store, cluster, cancelled, rounds, codes)
    finally:
        store.close()


def _requests(store: Store) -> list[Any]:
    # manual requests are never listed by time: read them one by one
    out, rid = [], 1
    while (request := store.get_trigger(rid)) is not None:
        out.append(request)
        rid += 1
    return out


def audit(root: Path, store: Store, cluster: Cluster, cancelled: list[int], rounds: int,
          codes: dict[str, int]) -> dict[str, Any]:
    rows = [r for job in JOBS for r in store.list_executions(job_id=job, limit=None)]
    requests = _requests(store)
    by_occurrence: dict[str, list[Any]] = defaultdict(list)
    for r in rows:
        by_occurrence[r.occurrence_id].append(r)
    first_attempts = defaultdict(int)
    for r in rows:
        first_attempts[(r.occurrence_id, r.attempt)] += 1
    ran_twice = sum(n > 1 for n in first_attempts.values())
    starts = defaultdict(int)
    for job, spans in _spans(root, cluster.kills).items():
        for occurrence, attempt, _s, _e in spans:
            starts[(job, occurrence, attempt)] += 1
    ran_twice += sum(n > 1 for n in starts.values())
    concurrent, overlaps = 0, []
    for job, spans in _spans(root, cluster.kills).items():
        spans.sort(key=lambda s: s[2])
        for (o1, a1, s1, e1), (o2, a2, s2, e2) in zip(spans, spans[1:], strict=False):
            if s2 < e1 - 0.01:
                concurrent += 1
                overlaps.append(f"{job} {o1[:6]}/a{a1} {s1:.2f}-{e1:.2f} "
                                f"{o2[:6]}/a{a2} {s2:.2f}-{e2:.2f}")
    by_id = {r.id: r for r in rows}
    not_cancelled, after_cancel = [], 0
    for eid in cancelled:
        r = by_id[eid]
        if r.status not in (ExecutionStatus.CANCELLED, ExecutionStatus.SUCCEEDED):
            not_cancelled.append(f"{eid}:{r.status.value}:{r.error}")
        after_cancel += sum(o.attempt > r.attempt for o in by_occurrence[r.occurrence_id])
    # one execution (occurrence) per request: each request names its own first attempt
    linked = [q.execution_id for q in requests]
    unfinished = [q.id for q in requests if not q.done or q.execution_id is None]
    occurrences = {by_id[e].occurrence_id for e in linked if e in by_id}
    extra = len(by_occurrence) - len(occurrences)
    return {
        "seconds": SECONDS, "rounds": rounds, "kills": len(cluster.kills),
        "requests": len(requests), "executions": len(rows),
        "cancel_requested": len(cancelled),
        "cancelled": sum(by_id[e].status is ExecutionStatus.CANCELLED for e in cancelled),
        "ran_twice": ran_twice, "concurrent": concurrent, "overlaps": overlaps[:5],
        "not_cancelled": not_cancelled[:5], "after_cancel": after_cancel,
        "unfinished_requests": unfinished[:5],
        "shared_executions": len(linked) - len(set(linked)),
        "occurrences_without_request": extra, "exit_codes": codes,
    }


def _check(figures: dict[str, Any], db: str) -> None:
    print(f"\ncancel/trigger race {db}: {figures}")
    assert figures["kills"] >= 2, figures
    for key in ("ran_twice", "concurrent", "after_cancel", "shared_executions",
                "occurrences_without_request"):
        assert figures[key] == 0, figures
    for key in ("not_cancelled", "unfinished_requests"):
        assert figures[key] == [], figures
    assert all(code == 0 for code in figures["exit_codes"].values()), figures


def test_cancel_and_trigger_race_sqlite(tmp_path: Path) -> None:
    _check(run_race(tmp_path, f"sqlite:///{tmp_path / 'state.db'}"), "sqlite")


def test_cancel_and_trigger_race_postgresql(tmp_path: Path) -> None:
    from private_pg import PrivatePostgres

    try:
        server = PrivatePostgres(tmp_path / "pg")
    except RuntimeError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"PostgreSQL server binaries required in CI: {exc}")
        pytest.skip(str(exc))
    server.start()
    try:
        figures = run_race(tmp_path / "run", server.url)
    finally:
        server.stop()
    _check(figures, "postgresql")
