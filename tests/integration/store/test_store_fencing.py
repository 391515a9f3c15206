"""Fencing is enforced by the store (SPEC section 4), on SQLite and PostgreSQL: a final
status written with a stale fencing token changes nothing, whether the row was closed by
another node's recovery or claimed again with a newer token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conftest import StoreFactory

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id
from cronctl.store.base import NewExecution, Transition
from cronctl.store.writerecords import Fenced

S = ExecutionStatus
T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
OCC = occurrence_id("solo", T0)
S_1 = timedelta(seconds=1)


def running(store: Store, *, attempt: int = 1, node: str = "n1", token: int | None) -> int:
    [eid] = store.insert_executions([NewExecution(
        job_id="solo", occurrence_id=OCC, scheduled_at=T0, attempt=attempt,
        origin=Origin.CRON, node_id=node, scope_node=None, fencing_token=token,
        status=S.RUNNING, started_at=T0, created_at=T0)])
    assert eid is not None
    return eid


def test_a_final_status_with_another_token_is_refused(store: Store) -> None:
    eid = running(store, token=5)
    assert not store.transition(eid, S.RUNNING, S.SUCCEEDED, fencing_token=4)
    assert store.transitions([Transition(eid, (S.RUNNING,), S.FAILED, "x", None, T0, 6)]) == [
        False]
    rec = store.get_execution(eid)
    assert rec is not None and rec.status is S.RUNNING and rec.finished_at is None
    assert store.transition(eid, S.RUNNING, S.SUCCEEDED, fencing_token=5, finished_at=T0)
    rec = store.get_execution(eid)
    assert rec is not None and rec.status is S.SUCCEEDED


def test_the_first_nodes_late_final_status_never_overwrites_the_recovery(
        store_factory: StoreFactory) -> None:
    first, other = store_factory(), store_factory()
    token = first.next_fencing_token("solo")
    eid = running(first, token=token)
    # The other node judged the first dead: it closes the attempt and runs the next one.
    newer = other.next_fencing_token("solo")
    assert other.transition(eid, S.RUNNING, S.FAILED, error="interrupted", finished_at=T0)
    retry = running(other, attempt=2, node="n2", token=newer)
    # The first node's handler ends after all: its final status is refused.
    late = T0 + timedelta(seconds=30)
    assert first.transitions([
        Transition(eid, (S.PENDING, S.RUNNING), S.SUCCEEDED, None, None, late, token),
    ]) == [False]
    rows = other.executions_of_occurrence("solo", OCC)
    assert [(r.id, r.status, r.fencing_token) for r in rows] == [
        (eid, S.FAILED, token), (retry, S.RUNNING, newer)]
    assert rows[0].finished_at == T0 and rows[0].error == "interrupted"
    assert newer > token


def test_a_row_claimed_again_refuses_the_older_claimant(store: Store) -> None:
    [eid] = store.insert_executions([NewExecution(
        job_id="solo", occurrence_id=OCC, scheduled_at=T0, attempt=2, origin=Origin.CRON,
        node_id="n1", scope_node=None, status=S.PENDING, created_at=T0)])
    assert eid is not None
    assert store.claim_execution(eid, node_id="n2", fencing_token=8, started_at=T0)
    assert not store.transition(eid, S.RUNNING, S.SUCCEEDED, fencing_token=7)
    assert store.transition(eid, S.RUNNING, S.SUCCEEDED, fencing_token=8)


def test_without_a_token_the_compare_and_set_is_on_the_status_alone(store: Store) -> None:
    eid = running(store, token=None)  # every_instance rows carry no token
    assert store.transition(eid, S.RUNNING, S.SUCCEEDED)
    assert not store.transition(eid, S.RUNNING, S.FAILED)


def test_a_refused_final_status_is_kept_beside_the_row(store: Store) -> None:
    eid = running(store, token=5)
    assert store.transition(eid, S.RUNNING, S.LOST, error="lost", finished_at=T0)
    late = T0 + timedelta(seconds=30)
    assert store.transitions([Transition(eid, (S.RUNNING,), S.SUCCEEDED, None, None, late,
                                         5)]) == [False]
    assert store.record_fenced(eid, S.SUCCEEDED, late)
    assert not store.record_fenced(eid, S.FAILED, late + timedelta(seconds=1))  # first stays
    assert not store.record_fenced(eid + 1000, S.FAILED, late)
    rec = store.get_execution(eid)
    assert rec is not None
    assert (rec.status, rec.fenced_status, rec.fenced_at) == (S.LOST, S.SUCCEEDED, late)


def test_a_fenced_row_without_locks_takes_a_token(store: Store) -> None:
    """A recovered every_instance attempt has no guard lock, but a fencing token."""
    row = NewExecution(job_id="each", occurrence_id=occurrence_id("each", T0),
                       scheduled_at=T0, attempt=2, origin=Origin.CRON, node_id="n1",
                       scope_node="n1", status=S.RUNNING, started_at=T0, created_at=T0,
                       fenced=True)
    plain = NewExecution(job_id="each", occurrence_id=occurrence_id("each", T0 + S_1),
                         scheduled_at=T0 + S_1, attempt=1, origin=Origin.CRON, node_id="n1",
                         scope_node="n1", status=S.RUNNING, started_at=T0, created_at=T0)
    got = store.insert_guarded([row, plain])
    assert isinstance(got[0], Fenced) and isinstance(got[1], int)
    first = store.get_execution(got[0].execution_id)
    assert first is not None and first.fencing_token == got[0].token
    second = store.get_execution(got[1])
    assert second is not None and second.fencing_token is None
