"""The Store contract, batch and polling methods: every backend passes the same tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from conftest import StoreFactory
from test_store_contract import must_insert, race

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id
from cronctl.store.base import NewExecution, Transition

S = ExecutionStatus
T0 = datetime(2026, 3, 8, 7, 0, 0, 123456, tzinfo=UTC)


def row(job: str, at: datetime = T0, *, scope: str | None = None, attempt: int = 1,
        status: ExecutionStatus = S.PENDING, started: datetime | None = None) -> NewExecution:
    return NewExecution(job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at,
                        attempt=attempt, origin=Origin.CRON, node_id="n1", scope_node=scope,
                        fencing_token=None, target="python:mod:fn", status=status,
                        started_at=started, created_at=at)


def test_insert_executions_in_order_with_losers(store: Store) -> None:
    assert store.insert_executions([]) == []
    earlier = must_insert(store, "b")
    rows = [row("c", status=S.RUNNING, started=T0 + timedelta(seconds=1)), row("b"),
            row("a"), row("a"), row("a", scope="n1"), row("a", attempt=2)]
    ids = store.insert_executions(rows)
    assert ids[1] is None and ids[3] is None  # existed before / earlier in the batch
    won = [i for i in ids if i is not None]
    assert len(won) == 4 and len(set(won)) == 4 and earlier not in won
    c = store.get_execution(ids[0])  # type: ignore[arg-type]
    assert c is not None
    assert (c.job_id, c.status, c.started_at, c.created_at) == (
        "c", S.RUNNING, T0 + timedelta(seconds=1), T0)
    assert (c.scheduled_at, c.target, c.origin, c.node_id) == (T0, "python:mod:fn",
                                                                 Origin.CRON, "n1")
    a_every = store.get_execution(ids[4])  # type: ignore[arg-type]
    assert a_every is not None and a_every.scope_node == "n1"
    a2 = store.get_execution(ids[5])  # type: ignore[arg-type]
    assert a2 is not None and (a2.attempt, a2.scope_node) == (2, None)


def test_insert_executions_larger_than_one_statement(store: Store) -> None:
    # More rows than one multi-row INSERT takes (SQLite: 76): ids match their rows across
    # statements, and a key repeated in a later statement still loses.
    rows = [row(f"j{k:03d}") for k in range(200)] + [row("j005"), row("j150")]
    ids = store.insert_executions(rows)
    assert ids[-2:] == [None, None]
    assert len({i for i in ids[:200]}) == 200 and None not in ids[:200]
    for r, new_id in zip(rows[:200], ids, strict=False):
        got = store.get_execution(new_id)  # type: ignore[arg-type]
        assert got is not None and got.job_id == r.job_id


def test_racing_batches_each_row_has_one_winner(store_factory: StoreFactory) -> None:
    jobs = [f"j{k}" for k in range(30)]
    # Each racer inserts the same occurrences in a different order.
    results = race(store_factory, 4, lambda s, i: dict(zip(
        jobs[i::1] + jobs[:i], s.insert_executions([row(j) for j in jobs[i:] + jobs[:i]]),
        strict=True)))
    for job in jobs:
        assert sum(r[job] is not None for r in results) == 1, job


def test_transitions_in_one_call(store: Store) -> None:
    a, b = must_insert(store, "a"), must_insert(store, "b")
    assert store.transitions([]) == []
    done = store.transitions([
        Transition(a, S.PENDING, S.RUNNING, started_at=T0),
        Transition(b, S.RUNNING, S.SUCCEEDED),  # b is pending: not changed
        Transition(a, (S.PENDING, S.RUNNING), S.FAILED, error="boom", finished_at=T0),
        Transition(999_999, S.PENDING, S.RUNNING),
    ])
    assert done == [True, False, True, False]
    rec = store.get_execution(a)
    assert rec is not None
    assert (rec.status, rec.error, rec.started_at, rec.finished_at) == (S.FAILED, "boom", T0, T0)
    other = store.get_execution(b)
    assert other is not None and other.status is S.PENDING


def test_a_batch_of_many_shapes_is_what_one_change_at_a_time_would_do(
        store_factory: StoreFactory) -> None:
    """A burst's final statuses go to PostgreSQL as one statement per shape of change
    (unique ids): each row's outcome, fencing and error must be what the same changes
    made one by one give (on a second set of rows prepared the same way)."""
    def prepare(store: Store, prefix: str) -> list[int]:
        ids = [must_insert(store, f"{prefix}{i}") for i in range(8)]
        assert store.transition(ids[1], S.PENDING, S.RUNNING, started_at=T0)
        assert store.transition(ids[6], S.PENDING, S.SUCCEEDED, finished_at=T0)
        return ids

    later = T0 + timedelta(seconds=3)

    def changes(ids: list[int]) -> list[Transition]:
        return [
            Transition(ids[0], S.PENDING, S.RUNNING, started_at=later),
            Transition(ids[1], (S.PENDING, S.RUNNING), S.SUCCEEDED, finished_at=later,
                       fencing_token=7),  # the token the rows carry: changed
            Transition(ids[2], (S.PENDING, S.RUNNING), S.FAILED, error="boom",
                       finished_at=later, fencing_token=8),  # stale claim: refused
            Transition(ids[3], S.PENDING, S.FAILED, "it's \"quoted\"", T0, later),
            Transition(ids[4], S.PENDING, S.SUCCEEDED, None, T0, later),
            Transition(ids[5], S.RUNNING, S.SUCCEEDED, finished_at=later),  # not running
            Transition(ids[6], (S.PENDING, S.RUNNING), S.FAILED, finished_at=later),  # final
            Transition(999_999, S.PENDING, S.RUNNING, started_at=later),  # no such row
            Transition(ids[7], (S.PENDING, S.RUNNING), S.CANCELLED, error="cancelled",
                       finished_at=later),
        ]

    batched, single = store_factory(), store_factory()
    first = prepare(batched, "batch")
    done = batched.transitions(changes(first))
    assert done == [True, True, False, True, True, False, False, False, True]
    rows = [batched.get_execution(i) for i in first]
    seen = [(r.status, r.error, r.started_at, r.finished_at) for r in rows if r is not None]
    # The same, one change at a time, on rows prepared the same way.
    second = prepare(single, "single")
    one_by_one = [single.transitions([c])[0] for c in changes(second)]
    assert one_by_one == done
    again = [single.get_execution(i) for i in second]
    assert [(r.status, r.error, r.started_at, r.finished_at) for r in again
            if r is not None] == seen
    assert seen[3] == (S.FAILED, 'it\'s "quoted"', T0, later)
    assert seen[2][0] is S.PENDING and seen[0] == (S.RUNNING, None, later, None)


def test_the_two_instants_of_a_dst_fold_in_one_batch_stay_apart(store: Store) -> None:
    """In one zone the two 01:30 of a fold compare (and hash) equal: a batch that
    converts each instant once must still tell them apart."""
    first = datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"))
    second = first.replace(fold=1)
    ids = store.insert_executions([row("a", first), row("b", second)])
    got = [store.get_execution(i) for i in ids if i is not None]
    assert [r.scheduled_at for r in got if r is not None] == [
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC), datetime(2026, 11, 1, 6, 30, tzinfo=UTC)]
    store.advance_cursors({"a": first, "b": second})
    states = store.job_states()
    cursors = [states[j][0] for j in "ab"]
    assert cursors == [datetime(2026, 11, 1, 5, 30, tzinfo=UTC),
                       datetime(2026, 11, 1, 6, 30, tzinfo=UTC)]


def test_advance_cursors_never_move_back(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.advance_cursors({})
    store.advance_cursor("a", T0)
    store.advance_cursors({"a": T0 - timedelta(hours=1), "b": T0, "c": T0 + timedelta(days=1)})
    states = store.job_states()
    assert states == {"a": (T0, False), "b": (T0, False), "c": (T0 + timedelta(days=1), False)}
    instants = [T0 + timedelta(seconds=s) for s in (5, 3, 9, 1)]
    race(store_factory, 4, lambda s, i: s.advance_cursors({"a": instants[i], "b": instants[i]}))
    states = store.job_states()
    assert states["a"] == (max(instants), False) and states["b"] == (max(instants), False)
    fresh = store.get_schedule("c")
    assert fresh is not None and (fresh.definition, fresh.paused, fresh.fencing) == ({}, False, 0)


def test_job_states_and_paused_ids(store: Store) -> None:
    assert store.job_states() == {} and store.paused_job_ids() == set()
    store.set_paused("p", True)
    store.set_paused("q", True)
    store.set_paused("q", False)
    store.advance_cursor("r", T0)
    assert store.paused_job_ids() == {"p"}
    assert store.job_states() == {"p": (None, True), "q": (None, False), "r": (T0, False)}
