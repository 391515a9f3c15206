"""What notifications need of the store, on SQLite and PostgreSQL: a decision's mark is
claimed by one caller cluster-wide, the previous occurrence's outcome, and the delivery
failures ``status`` shows."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from conftest import StoreFactory

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id

T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def test_a_mark_is_claimed_once_across_stores(store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(4)]
    results: list[bool] = []
    lock = threading.Lock()
    gate = threading.Barrier(len(stores))

    def claim(s: Store, node: str) -> None:
        gate.wait()
        won = s.claim_notice("k" * 64, event="late", job_id="job", node_id=node, now=T0)
        with lock:
            results.append(won)

    threads = [threading.Thread(target=claim, args=(s, f"n{i}")) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, False, False, True]
    assert stores[0].claim_notice("other", event="late", job_id="job", node_id="n1", now=T0)


def test_old_marks_are_forgotten(store: Store) -> None:
    assert store.claim_notice("old", event="missed", job_id="j", node_id="n1", now=T0)
    assert store.claim_notice("new", event="missed", job_id="j", node_id="n1", now=T0 + 2 * S)
    assert store.forget_notices(T0 + S) == 1
    assert store.claim_notice("old", event="missed", job_id="j", node_id="n1", now=T0 + 3 * S)
    assert not store.claim_notice("new", event="missed", job_id="j", node_id="n1", now=T0)


def _ended(store: Store, job: str, at: datetime, status: ExecutionStatus, *, attempt: int = 1,
           scope: str | None = None, node: str = "n1") -> int:
    eid = store.try_insert_execution(
        job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at, attempt=attempt,
        origin=Origin.CRON, node_id=node, scope_node=scope, status=ExecutionStatus.RUNNING,
        started_at=at, now=at)
    assert eid is not None
    if status is not ExecutionStatus.RUNNING:
        assert store.transition(eid, ExecutionStatus.RUNNING, status, finished_at=at + S)
    return eid


def test_previous_outcome_is_the_newest_ended_occurrence_before(store: Store) -> None:
    assert store.previous_outcome("job", T0) is None
    _ended(store, "job", T0, ExecutionStatus.DEAD_LETTER)
    _ended(store, "job", T0 + S, ExecutionStatus.CANCELLED)  # says nothing: passed over
    _ended(store, "job", T0 + 2 * S, ExecutionStatus.RUNNING)  # not ended
    _ended(store, "other", T0 + 2 * S, ExecutionStatus.SUCCEEDED)
    assert store.previous_outcome("job", T0 + 3 * S) == (T0, ExecutionStatus.DEAD_LETTER)
    assert store.previous_outcome("job", T0) is None  # strictly before
    _ended(store, "job", T0 + 2 * S, ExecutionStatus.FAILED, attempt=2)
    assert store.previous_outcome("job", T0 + 3 * S) == (T0 + 2 * S, ExecutionStatus.FAILED)
    # every_instance rows of one node only
    _ended(store, "each", T0, ExecutionStatus.DEAD_LETTER, scope="n2", node="n2")
    _ended(store, "each", T0 + S, ExecutionStatus.SUCCEEDED, scope="n1")
    assert store.previous_outcome("each", T0 + 5 * S, scope_node="n2") == (
        T0, ExecutionStatus.DEAD_LETTER)
    assert store.previous_outcome("each", T0 + 5 * S, scope_node="n1") == (
        T0 + S, ExecutionStatus.SUCCEEDED)


def test_delivery_failures_count_until_a_delivery_works(store: Store) -> None:
    assert store.delivery_failures() == []
    store.note_delivery("n1", ok=False, error="webhook http://h/…: HTTP 500", now=T0)
    store.note_delivery("n1", ok=False, error="webhook http://h/…: HTTP 502", now=T0 + S)
    store.note_delivery("n2", ok=False, error=None, now=T0)
    [one, two] = store.delivery_failures()
    assert (one.node_id, one.failing_since, one.last_failure_at, one.failures,
            one.last_error) == ("n1", T0, T0 + S, 2, "webhook http://h/…: HTTP 502")
    assert (two.node_id, two.failures, two.last_error) == ("n2", 1, None)
    store.note_delivery("n1", ok=True, now=T0 + 2 * S)
    assert [f.node_id for f in store.delivery_failures()] == ["n2"]
    assert store.delivery_failures(["n1"]) == []
