"""The Store contract: every backend (SQLite, PostgreSQL) passes the same tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import TypeVar
from zoneinfo import ZoneInfo

import pytest
from conftest import StoreFactory

from cronctl.jobs.model import (
    CommandTarget,
    ExecutionStatus,
    JobDefinition,
    Mode,
    Origin,
    PythonTarget,
)
from cronctl.store import Store, occurrence_id

S = ExecutionStatus
T0 = datetime(2026, 3, 8, 7, 0, 0, 123456, tzinfo=UTC)
TTL = timedelta(seconds=30)
R = TypeVar("R")


def insert(
    store: Store,
    job: str = "job",
    at: datetime = T0,
    *,
    attempt: int = 1,
    scope: str | None = None,
    node: str = "n1",
    origin: Origin = Origin.CRON,
    status: ExecutionStatus = S.PENDING,
) -> int | None:
    return store.try_insert_execution(
        job_id=job,
        occurrence_id=occurrence_id(job, at),
        scheduled_at=at,
        attempt=attempt,
        origin=origin,
        node_id=node,
        scope_node=scope,
        fencing_token=7,
        target="python:mod:fn",
        status=status,
        now=at,
    )


def must_insert(store: Store, *args: object, **kwargs: object) -> int:
    new_id = insert(store, *args, **kwargs)  # type: ignore[arg-type]
    assert new_id is not None
    return new_id


def race(factory: StoreFactory | list[Store], n: int, fn: Callable[[Store, int], R]) -> list[R]:
    """Run ``fn(store_i, i)`` in ``n`` threads, each with its own Store (own engine and
    connections; pass a list to reuse stores across rounds), released together by a
    barrier."""
    stores = factory[:n] if isinstance(factory, list) else [factory() for _ in range(n)]
    barrier = threading.Barrier(n)
    results: list[R | None] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = fn(stores[i], i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return results  # type: ignore[return-value]


# --- time ------------------------------------------------------------------------------


def test_datetimes_round_trip_to_the_microsecond_as_aware_utc(store: Store) -> None:
    local = datetime(2026, 11, 1, 1, 30, 0, 999999, tzinfo=ZoneInfo("America/New_York"))
    second_pass = local.replace(fold=1)
    for planned in (local, second_pass, T0, datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=UTC)):
        eid = must_insert(store, "rt", planned)
        started = planned + timedelta(microseconds=1)
        assert store.transition(eid, S.PENDING, S.RUNNING, started_at=started)
        rec = store.get_execution(eid)
        assert rec is not None
        # Compare in UTC: Python never finds a fold instant equal to one in another zone.
        utc = planned.astimezone(UTC)
        assert rec.scheduled_at == utc and rec.scheduled_at.utcoffset() == timedelta(0)
        assert rec.started_at == started.astimezone(UTC) and rec.created_at == utc
        assert rec.scheduled_at.tzinfo is not None
    # The two passes of a DST fold are different instants and different occurrences.
    assert occurrence_id("rt", local) != occurrence_id("rt", second_pass)
    east = timezone(timedelta(hours=5, minutes=45))
    cursor = datetime(2026, 1, 1, 5, 45, 0, 5, tzinfo=east)
    assert store.advance_cursor("rt", cursor) == cursor
    state = store.get_schedule("rt")
    assert state is not None and state.cursor == cursor
    assert state.cursor.utcoffset() == timedelta(0)


def test_naive_datetimes_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="aware"):
        insert(store, at=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="aware"):
        store.advance_cursor("j", datetime(2026, 1, 1))


# --- the election ----------------------------------------------------------------------


def test_insert_if_absent_single_and_every_instance(store: Store) -> None:
    first = insert(store)
    assert first is not None
    assert insert(store, node="n2") is None  # single_instance: one per occurrence+attempt
    assert insert(store, attempt=2) is not None  # the next attempt is a new row
    assert insert(store, at=T0 + timedelta(seconds=1)) is not None  # another occurrence
    a = insert(store, "every", scope="n1", node="n1")
    b = insert(store, "every", scope="n2", node="n2")
    assert a is not None and b is not None and a != b  # every_instance: one per node
    assert insert(store, "every", scope="n1", node="n1") is None
    rec = store.get_execution(first)
    assert rec is not None
    assert (rec.job_id, rec.attempt, rec.status, rec.origin) == ("job", 1, S.PENDING, Origin.CRON)
    assert rec.occurrence_id == occurrence_id("job", T0) and rec.scope_node is None
    assert (rec.node_id, rec.fencing_token, rec.target) == ("n1", 7, "python:mod:fn")
    every = store.get_execution(b)
    assert every is not None and every.scope_node == "n2"


def test_racing_inserts_exactly_one_wins(store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(4)]
    for round_ in range(10):
        at = T0 + timedelta(minutes=round_)
        results = race(stores, 4, lambda s, i, at=at: insert(s, at=at, node=f"n{i}"))
        winners = [r for r in results if r is not None]
        assert len(winners) == 1, results
    assert len(store_factory().list_executions(limit=None)) == 10


def test_racing_transitions_exactly_one_wins(store_factory: StoreFactory) -> None:
    store = store_factory()
    stores = [store_factory() for _ in range(4)]
    for round_ in range(10):
        eid = must_insert(store, at=T0 + timedelta(minutes=round_))
        results = race(stores, 4, lambda s, i, eid=eid: s.transition(eid, S.PENDING, S.RUNNING))
        assert sorted(results) == [False, False, False, True]
        done = race(
            stores,
            2,
            lambda s, i, eid=eid: s.transition(
                eid, S.RUNNING, (S.SUCCEEDED, S.ABANDONED)[i], finished_at=T0
            ),
        )
        assert sorted(done) == [False, True]
        rec = store.get_execution(eid)
        assert rec is not None and rec.status in (S.SUCCEEDED, S.ABANDONED)


def test_claim_starts_a_pending_row_once_and_records_who_runs_it(store: Store) -> None:
    eid = must_insert(store)
    later = T0 + timedelta(seconds=5, microseconds=7)
    assert store.claim_execution(eid, node_id="n9", fencing_token=12, started_at=later)
    rec = store.get_execution(eid)
    assert rec is not None
    assert (rec.status, rec.node_id, rec.fencing_token, rec.started_at) == (
        S.RUNNING, "n9", 12, later)
    assert rec.scope_node is None and rec.attempt == 1  # the key is unchanged
    # not pending any more: a second claim changes nothing
    assert not store.claim_execution(eid, node_id="n2", fencing_token=13, started_at=T0)
    assert store.get_execution(eid) == rec
    assert not store.claim_execution(10_000, node_id="n2", fencing_token=None, started_at=T0)


def test_racing_claims_exactly_one_wins(store_factory: StoreFactory) -> None:
    store = store_factory()
    stores = [store_factory() for _ in range(4)]
    for round_ in range(5):
        eid = must_insert(store, at=T0 + timedelta(minutes=round_))
        results = race(stores, 4, lambda s, i, eid=eid: s.claim_execution(
            eid, node_id=f"n{i}", fencing_token=i, started_at=T0))
        assert sorted(results) == [False, False, False, True]
        rec = store.get_execution(eid)
        assert rec is not None and rec.node_id == f"n{results.index(True)}"


def test_transition_is_compare_and_set(store: Store) -> None:
    eid = must_insert(store)
    assert not store.transition(eid, S.RUNNING, S.SUCCEEDED)
    assert store.transition(eid, [S.PENDING, S.RUNNING], S.RUNNING, started_at=T0)
    assert store.transition(
        eid, {S.RUNNING}, S.FAILED, error="boom", finished_at=T0 + timedelta(seconds=2)
    )
    rec = store.get_execution(eid)
    assert rec is not None
    assert (rec.status, rec.error, rec.started_at) == (S.FAILED, "boom", T0)
    assert rec.finished_at == T0 + timedelta(seconds=2)
    assert not store.transition(eid, S.RUNNING, S.SUCCEEDED)
    assert not store.transition(999_999, S.PENDING, S.RUNNING)
    assert store.get_execution(999_999) is None


# --- schedules -------------------------------------------------------------------------


def _job(job_id: str, **kw: object) -> JobDefinition:
    return JobDefinition(id=job_id, target=PythonTarget("mod", "fn"), cron="0 * * * * *", **kw)  # type: ignore[arg-type]


def test_save_definitions_keeps_cursor_paused_and_fencing(store: Store) -> None:
    assert store.get_schedule("a") is None
    store.save_definitions([_job("a"), _job("b", mode=Mode.SINGLE_INSTANCE)], now=T0)
    a = store.get_schedule("a")
    assert a is not None
    assert (a.cursor, a.paused, a.fencing, a.updated_at) == (None, False, 0, T0)
    assert a.definition["target"] == "python:mod:fn" and a.definition["cron"] == "0 * * * * *"
    store.advance_cursor("a", T0)
    store.set_paused("a", True)
    assert store.next_fencing_token("a") == 1
    cmd = JobDefinition(
        id="a",
        target=CommandTarget(("echo", "hi"), env={"TOKEN": "s3cret"}),
        every=timedelta(seconds=90),
    )
    store.save_definitions([cmd], now=T0 + timedelta(hours=1))
    a = store.get_schedule("a")
    assert a is not None
    assert (a.cursor, a.paused, a.fencing) == (T0, True, 1)
    assert a.definition["command"]["argv"] == ["echo", "hi"]
    assert a.definition["every"] == 90 and a.definition["schedule"] == cmd.schedule_text
    assert "s3cret" not in repr(a.definition)
    b = store.get_schedule("b")
    assert b is not None and b.definition["mode"] == "single_instance"
    assert [s.job_id for s in store.list_schedules()] == ["a", "b"]
    store.set_paused("a", False)
    a = store.get_schedule("a")
    assert a is not None and not a.paused


def test_first_seen_is_the_first_save_of_a_definition(store: Store) -> None:
    """``why`` and ``replay`` answer nothing before it (issue 24)."""
    store.set_paused("late", True)  # a row made before any scheduler had the job
    assert store.get_schedule("late").first_seen is None  # type: ignore[union-attr]
    store.save_definitions([_job("a"), _job("late")], now=T0)
    store.save_definitions([_job("a"), _job("late"), _job("new")], now=T0 + timedelta(hours=1))
    seen = {j: store.get_schedule(j).first_seen for j in ("a", "late", "new")}  # type: ignore[union-attr]
    assert seen == {"a": T0, "late": T0, "new": T0 + timedelta(hours=1)}


def test_an_unchanged_definition_is_not_written_again(store: Store) -> None:
    """Every node saves every job's definition at start: only a change is written (and
    ``updated_at`` says when a definition last changed)."""
    store.save_definitions([_job("a"), _job("b")], now=T0)
    later = T0 + timedelta(hours=1)
    changed = JobDefinition(id="b", target=PythonTarget("mod", "fn"), cron="30 * * * * *")
    store.save_definitions([_job("a"), changed], now=later)
    got = {s.job_id: (s.updated_at, s.definition["cron"]) for s in store.list_schedules()}
    assert got == {"a": (T0, "0 * * * * *"), "b": (later, "30 * * * * *")}


def test_cursor_never_moves_backwards(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.advance_cursor("j", T0) == T0
    assert store.advance_cursor("j", T0 - timedelta(hours=1)) == T0
    assert store.advance_cursor("j", T0 - timedelta(microseconds=1)) == T0
    later = T0 + timedelta(microseconds=1)
    assert store.advance_cursor("j", later) == later
    instants = [T0 + timedelta(seconds=s) for s in (5, 3, 9, 1, 7, 2, 8, 4)]
    race(store_factory, len(instants), lambda s, i: s.advance_cursor("j", instants[i]))
    state = store.get_schedule("j")
    assert state is not None and state.cursor == max(instants)
    # A cursor call on an unknown job creates its row, paused False, no definition yet.
    store.advance_cursor("new", T0)
    new = store.get_schedule("new")
    assert new is not None and (new.definition, new.paused, new.fencing) == ({}, False, 0)


def test_fencing_tokens_strictly_increase(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert [store.next_fencing_token("f") for _ in range(3)] == [1, 2, 3]
    assert store.next_fencing_token("other") == 1

    def take(s: Store, i: int) -> list[int]:
        return [s.next_fencing_token("f") for _ in range(20)]

    per_thread = race(store_factory, 4, take)
    for tokens in per_thread:
        assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
    everything = sorted(t for tokens in per_thread for t in tokens)
    assert everything == list(range(4, 84))
    state = store.get_schedule("f")
    assert state is not None and state.fencing == 83


# --- history -----------------------------------------------------------------------------


def test_history_filters_and_order(store: Store) -> None:
    ids = {}
    for n, (job, minutes, status) in enumerate(
        [("a", 0, S.SUCCEEDED), ("a", 10, S.FAILED), ("b", 5, S.SUCCEEDED), ("a", 20, S.RUNNING)]
    ):
        eid = must_insert(store, job, T0 + timedelta(minutes=minutes), node=f"n{n % 2}")
        store.transition(eid, S.PENDING, status)
        ids[(job, minutes)] = eid
    retry = must_insert(store, "a", T0 + timedelta(minutes=10), attempt=2)
    every = store.list_executions()
    assert [r.id for r in every] == [
        ids[("a", 20)],
        retry,
        ids[("a", 10)],
        ids[("b", 5)],
        ids[("a", 0)],
    ]
    assert [r.id for r in store.list_executions(job_id="b")] == [ids[("b", 5)]]
    assert [r.id for r in store.list_executions(status=S.SUCCEEDED)] == [
        ids[("b", 5)],
        ids[("a", 0)],
    ]
    assert {r.id for r in store.list_executions(status=[S.FAILED, S.PENDING])} == {
        ids[("a", 10)],
        retry,
    }
    since = store.list_executions(since=T0 + timedelta(minutes=5))
    assert [r.id for r in since] == [ids[("a", 20)], retry, ids[("a", 10)], ids[("b", 5)]]
    window = store.list_executions(
        since=T0 + timedelta(minutes=5), until=T0 + timedelta(minutes=10), job_id="a"
    )
    assert [r.id for r in window] == [retry, ids[("a", 10)]]
    assert len(store.list_executions(limit=2)) == 2
    assert store.list_executions(job_id="zzz") == []
    latest = store.latest_executions(["a", "b", "zzz"])
    assert {k: v.id for k, v in latest.items()} == {"a": ids[("a", 20)], "b": ids[("b", 5)]}
    assert store.latest_executions([]) == {}
    attempts = store.executions_of_occurrence("a", occurrence_id("a", T0 + timedelta(minutes=10)))
    assert [r.attempt for r in attempts] == [1, 2]


def test_latest_executions_of_many_jobs_in_one_read(store: Store) -> None:
    """Thousands of ids (past SQLite's old 999-parameter limit) in one statement; a later
    attempt at the same planned instant is the newer row; jobs without rows are absent."""
    newest = {}
    for n in range(1500):
        job = f"job-{n}"
        for minutes in (0, 5):
            newest[job] = must_insert(store, job, T0 + timedelta(minutes=minutes))
    retry = must_insert(store, "job-7", T0 + timedelta(minutes=5), attempt=2)
    newest["job-7"] = retry
    wanted = [*newest, "job-7", "nobody"]  # a repeated id and an unknown one
    latest = store.latest_executions(wanted)
    assert {k: v.id for k, v in latest.items()} == newest


def test_recent_executions_of_many_jobs_in_one_read(store: Store) -> None:
    """Each job's newest rows, newest first, as ``list_executions`` orders them (a later
    attempt at the same instant is newer); a job with fewer rows gives what it has; a
    repeated id counts once and an unknown one is absent."""
    for n in range(40):
        for minutes in range(n % 4):  # 0 to 3 rows a job
            must_insert(store, f"job-{n}", T0 + timedelta(minutes=minutes))
    retry = must_insert(store, "job-3", T0 + timedelta(minutes=2), attempt=2)
    wanted = [f"job-{n}" for n in range(40)]
    recent = store.recent_executions([*wanted, "job-3", "nobody"], 2)
    expected = {job: [r.id for r in store.list_executions(job_id=job, limit=2)]
                for job in wanted}
    assert {job: [r.id for r in rows] for job, rows in recent.items()} == {
        job: ids for job, ids in expected.items() if ids}
    assert [r.id for r in recent["job-3"]][0] == retry
    assert len(recent["job-1"]) == 1 and "job-0" not in recent
    assert store.recent_executions([], 5) == {}
    assert store.recent_executions(["job-3"], 0) == {}


def test_pending_or_running_for_recovery(store: Store) -> None:
    p1 = must_insert(store, "a", T0 + timedelta(minutes=2), node="n1")
    r1 = must_insert(store, "b", T0 + timedelta(minutes=1), node="n2")
    store.transition(r1, S.PENDING, S.RUNNING)
    done = must_insert(store, "a", T0, node="n1")
    store.transition(done, S.PENDING, S.SUCCEEDED)
    assert [r.id for r in store.pending_or_running()] == [r1, p1]
    assert [r.id for r in store.pending_or_running(node_id="n1")] == [p1]
    assert [r.id for r in store.pending_or_running(job_ids=["b"])] == [r1]
    assert store.pending_or_running(node_id="n1", job_ids=["b"]) == []


def test_cancel_requests(store: Store) -> None:
    a = must_insert(store, "a")
    b = must_insert(store, "b")
    c = must_insert(store, "c")
    store.transition(c, S.PENDING, S.SUCCEEDED)
    assert store.cancel_requested([a, b, c]) == set()
    assert store.request_cancel(a)
    assert not store.request_cancel(c)  # already ended
    assert not store.request_cancel(424242)
    assert store.cancel_requested([a, b, c, 424242]) == {a}
    assert store.cancel_requested([]) == set()
    rec = store.get_execution(a)
    assert rec is not None and rec.cancel_requested


def test_logs_and_progress(store: Store) -> None:
    a = must_insert(store, "a")
    b = must_insert(store, "b")
    t = T0
    store.append_logs(
        [
            (a, t, "info", "one"),
            (b, t, 40, "b-one"),
            (a, t + timedelta(microseconds=7), "WARNING", "two"),
            (999_999, t, "INFO", "dropped"),
        ]
    )
    store.append_logs([(a, t, 10, "three \x1b[31m\nmulti-line")])
    store.append_logs([])
    lines = store.read_logs(a)
    assert [(ln.seq, ln.level, ln.message) for ln in lines] == [
        (1, "INFO", "one"),
        (2, "WARNING", "two"),
        (3, "DEBUG", "three \x1b[31m\nmulti-line"),
    ]
    assert lines[1].at == t + timedelta(microseconds=7) and lines[0].execution_id == a
    assert [ln.seq for ln in store.read_logs(a, after_seq=1)] == [2, 3]
    assert [ln.seq for ln in store.read_logs(a, after_seq=1, limit=1)] == [2]
    assert [(ln.seq, ln.level) for ln in store.read_logs(b)] == [(1, "ERROR")]
    assert store.read_logs(999_999) == []
    store.record_progress(a, 3, 10, "copying")
    store.record_progress(a, 5, None, None)
    rec = store.get_execution(a)
    assert rec is not None
    assert (rec.progress_done, rec.progress_total, rec.progress_message) == (5, None, None)


# --- trigger requests --------------------------------------------------------------------


def test_triggers_are_taken_once(store_factory: StoreFactory) -> None:
    store = store_factory()
    first = store.enqueue_trigger("a", now=T0)
    second = store.enqueue_trigger("b", now=T0)
    assert first is not None and second is not None and first != second
    taken = store.take_triggers("n1", job_ids=["b"], now=T0)
    assert [t.id for t in taken] == [second]
    assert (taken[0].taken_by, taken[0].taken_at, taken[0].origin) == ("n1", T0, Origin.MANUAL)
    assert store.take_triggers("n2", job_ids=["b"]) == []
    ids = [store.enqueue_trigger("c", now=T0) for _ in range(20)]
    results = race(store_factory, 4, lambda s, i: s.take_triggers(f"n{i}", limit=100))
    claimed = sorted(t.id for batch in results for t in batch)
    assert claimed == sorted([first, *ids])  # type: ignore[type-var]
    assert store.take_triggers("n1") == []
    store.complete_trigger(first, execution_id=12)
    got = store.get_trigger(first)
    assert got is not None and got.done and got.execution_id == 12 and got.taken_by is not None
    assert store.get_trigger(10_000) is None


def test_requests_of_dead_takers_are_released_or_tied_to_their_row(store: Store) -> None:
    """A request its taker never finished: taken again (exactly once) when no row was
    written for it; done with the row when the taker had written one (at the request's
    ``requested_at``, or its ``scheduled_at``)."""
    from cronctl.ids import occurrence_id
    from cronctl.store.base import NewExecution

    bare = store.enqueue_trigger("a", now=T0)
    ran = store.enqueue_trigger("b", now=T0 + timedelta(seconds=1))
    kept = store.enqueue_trigger("c", now=T0)
    assert bare is not None and ran is not None and kept is not None
    assert len(store.take_triggers("dead", job_ids=["a", "b"], now=T0)) == 2
    assert len(store.take_triggers("alive", job_ids=["c"], now=T0)) == 1
    planned = T0 + timedelta(seconds=1)
    [row] = store.insert_executions([NewExecution(
        job_id="b", occurrence_id=occurrence_id("b", planned), scheduled_at=planned, attempt=1,
        origin=Origin.MANUAL, node_id="dead", scope_node=None,
        status=ExecutionStatus.RUNNING, started_at=planned)])
    assert store.release_triggers(["dead"]) == 2
    got_bare, got_ran, got_kept = (store.get_trigger(i) for i in (bare, ran, kept))
    assert got_bare is not None and got_bare.taken_by is None and not got_bare.done
    assert got_ran is not None and got_ran.done and got_ran.execution_id == row
    assert got_kept is not None and got_kept.taken_by == "alive" and not got_kept.done
    assert store.release_triggers(["dead"]) == 0  # once
    assert [t.id for t in store.take_triggers("n2", now=T0)] == [bare]


def test_replay_requests_are_never_queued_twice(store: Store) -> None:
    planned = T0 - timedelta(days=1)
    rid = store.enqueue_trigger("a", Origin.REPLAY, scheduled_at=planned, now=T0)
    assert rid is not None
    assert store.enqueue_trigger("a", Origin.REPLAY, scheduled_at=planned, now=T0) is None
    assert store.enqueue_trigger("b", Origin.REPLAY, scheduled_at=planned, now=T0) is not None
    (taken,) = store.take_triggers("n1", job_ids=["a"])
    assert (taken.scheduled_at, taken.origin, taken.requested_at) == (planned, Origin.REPLAY, T0)
    assert store.enqueue_trigger("a", Origin.REPLAY, scheduled_at=planned) is None


def test_trigger_requests_of_a_window_oldest_instant_first(store: Store) -> None:
    zone = timezone(timedelta(hours=-5))
    planned = [T0 - timedelta(hours=h) for h in (1, 3, 2)]
    ids = {at: store.enqueue_trigger("a", Origin.REPLAY, scheduled_at=at, now=T0)
           for at in planned}
    store.enqueue_trigger("a", now=T0)  # run now: no instant, never listed
    store.enqueue_trigger("b", Origin.REPLAY, scheduled_at=planned[0], now=T0)
    got = store.list_triggers("a", since=(T0 - timedelta(hours=3)).astimezone(zone),
                              until=T0 - timedelta(hours=2))
    assert [(t.id, t.scheduled_at, t.job_id) for t in got] == [
        (ids[at], at, "a") for at in sorted(planned)[:2]]
    assert all(t.scheduled_at is not None and t.scheduled_at.tzinfo is UTC for t in got)
    assert store.list_triggers("a", since=T0, until=T0 + timedelta(days=1)) == []
    with pytest.raises(ValueError):
        store.list_triggers("a", since=T0.replace(tzinfo=None), until=T0)


# Node liveness and registration: test_store_liveness.py (with real processes).
