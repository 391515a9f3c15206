"""The runtime's judgement of a dead node against each real store: its running attempts go
to recovery while their guard locks stay, so no newer fire takes the job in between."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.runtime.liveness import Liveness
from cronctl.store import Store, occurrence_id
from cronctl.store.base import ExecutionRecord, NewExecution, job_lock

S = ExecutionStatus
T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)


def _row(at: datetime, node: str, status: ExecutionStatus = S.RUNNING) -> NewExecution:
    return NewExecution(job_id="long", occurrence_id=occurrence_id("long", at),
                        scheduled_at=at, attempt=1, origin=Origin.CRON, node_id=node,
                        scope_node=None, status=status, started_at=T0, created_at=T0,
                        locks=(job_lock("long"),))


def _judged_by_n1(store: Store) -> list[list[ExecutionRecord]]:
    """One judgement by node n1 a day later (every other node is dead); what it handed
    to recovery."""
    handed: list[list[ExecutionRecord]] = []
    liveness = Liveness(
        store, node_id="n1", ttl=timedelta(0), beat_every=1.0,
        clock=lambda: T0 + timedelta(days=1), jobs=dict, heartbeat=lambda: None,
        recover=lambda rows, ends: handed.append(list(rows)),
        unavailable=lambda exc: None, down=lambda: False)
    liveness.check()
    return handed


def test_a_dead_nodes_running_attempt_keeps_its_job_held_until_recovered(
        store: Store) -> None:
    store.register_node("gone", "elsewhere", 2, T0, ttl=timedelta(seconds=30))
    [running] = store.insert_guarded([_row(T0, "gone")])
    assert isinstance(running, int)
    handed = _judged_by_n1(store)
    assert [[r.id for r in rows] for rows in handed] == [[running]]
    # Until recovery closes it, the job stays held: a newer fire finds it taken.
    assert [g.execution_id for g in store.guard_locks()] == [running]
    assert store.insert_guarded([_row(T0 + timedelta(minutes=1), "n1")]) == [job_lock("long")]
    assert store.transition(running, S.RUNNING, S.LOST, finished_at=T0)
    assert store.guard_locks() == []


def test_a_dead_nodes_other_locks_are_released(store: Store) -> None:
    # A pending row (never started) does not keep its lock for recovery: its own claim
    # takes the lock again, and would find it held by itself.
    store.register_node("gone", "elsewhere", 2, T0, ttl=timedelta(seconds=30))
    [pending] = store.insert_guarded([_row(T0, "gone", S.PENDING)])
    assert isinstance(pending, int)
    handed = _judged_by_n1(store)
    assert [[r.id for r in rows] for rows in handed] == [[pending]]
    assert store.guard_locks() == []
