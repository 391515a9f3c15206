"""The guard-lock part of the Store contract (SQLite, PostgreSQL): a row and its
locks are written together or not at all; of racing stores exactly one takes a key; a
final status releases the locks; recovery releases the locks of nodes that are gone."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from conftest import StoreFactory
from test_store_contract import race

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id
from cronctl.store.base import Fenced, NewExecution, Transition, group_lock, job_lock

S = ExecutionStatus
T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
TTL = timedelta(seconds=30)
G = group_lock("nightly")


def row(job: str, at: datetime = T0, *, node: str = "n1", single: bool = False,
        locks: tuple[str, ...] = (G,), status: ExecutionStatus = S.RUNNING,
        attempt: int = 1) -> NewExecution:
    return NewExecution(job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at,
                        attempt=attempt, origin=Origin.CRON, node_id=node,
                        scope_node=None if single else node, status=status, started_at=T0,
                        created_at=T0, locks=locks)


def test_row_and_lock_together_or_not_at_all(store: Store) -> None:
    [first] = store.insert_guarded([row("a")])
    assert isinstance(first, int)
    [lock] = store.guard_locks()
    assert (lock.key, lock.execution_id, lock.node_id, lock.acquired_at) == (G, first, "n1", T0)
    # Another job of the group (any node): the key is held, nothing is written.
    assert store.insert_guarded([row("b", node="n2")]) == [G]
    assert store.list_executions(job_id="b") == []
    # Rows without locks in the same batch are written as usual.
    out = store.insert_guarded([row("c", locks=()), row("b")])
    assert isinstance(out[0], int) and out[1] == G
    # The same row again: the row exists (None), whatever the lock.
    assert store.insert_guarded([row("a")]) == [None]


def test_final_status_releases_the_lock(store: Store) -> None:
    [eid] = store.insert_guarded([row("a")])
    assert isinstance(eid, int)
    assert store.transitions([Transition(eid, S.RUNNING, S.RUNNING, started_at=T0)]) == [True]
    assert [g.key for g in store.guard_locks()] == [G]  # still running: still held
    assert store.transition(eid, S.RUNNING, S.SUCCEEDED, finished_at=T0)
    assert store.guard_locks() == []
    [nxt] = store.insert_guarded([row("b", node="n2")])
    assert isinstance(nxt, int)


def test_all_locks_or_none(store: Store) -> None:
    [eid] = store.insert_guarded([row("a", locks=(job_lock("solo"),))])
    assert isinstance(eid, int)
    both = (job_lock("solo2"), job_lock("solo"))
    assert store.insert_guarded([row("b", locks=both)]) == [job_lock("solo")]
    assert [g.key for g in store.guard_locks()] == [job_lock("solo")]


def test_claim_guarded(store: Store) -> None:
    [pending] = store.insert_guarded([row("r", status=S.PENDING, locks=(), attempt=2)])
    [holder] = store.insert_guarded([row("a")])
    assert isinstance(pending, int) and isinstance(holder, int)
    assert store.claim_guarded(pending, node_id="n2", fencing_token=None, started_at=T0,
                               locks=(G,)) == G
    rec = store.get_execution(pending)
    assert rec is not None and rec.status is S.PENDING
    store.transition(holder, S.RUNNING, S.FAILED, finished_at=T0)
    assert store.claim_guarded(pending, node_id="n2", fencing_token=None, started_at=T0,
                               locks=(G,)) is True
    assert [(g.key, g.execution_id, g.node_id) for g in store.guard_locks()] == [
        (G, pending, "n2")]
    # Not pending any more: False, and no lock is left behind by the failed claim.
    store.transition(pending, S.RUNNING, S.SUCCEEDED, finished_at=T0)
    assert store.claim_guarded(pending, node_id="n3", fencing_token=None, started_at=T0,
                               locks=(G,)) is False
    assert store.guard_locks() == []


def test_racing_stores_one_takes_the_key(store_factory: StoreFactory, backend: str) -> None:
    for rnd in range(3):
        # A group per round: the losers of a round wait for their group (they would be
        # served first: see the oldest-waiter test below).
        at, key = T0 + timedelta(seconds=rnd), group_lock(f"g{rnd}")
        got = race(store_factory, 4, lambda s, i, at=at, key=key: s.insert_guarded(
            [row(f"j{i}", at, node=f"n{i}", locks=(key,))])[0])
        winners = [g for g in got if isinstance(g, int)]
        assert len(winners) == 1 and got.count(key) == 3, got
        store = store_factory()
        assert [g.execution_id for g in store.guard_locks()] == winners
        assert store.transition(winners[0], S.RUNNING, S.SUCCEEDED, finished_at=at)


def test_racing_single_instance_occurrences(store_factory: StoreFactory) -> None:
    key = job_lock("solo")
    got = race(store_factory, 4, lambda s, i: s.insert_guarded(
        [row("solo", T0 + timedelta(seconds=i % 2), node=f"n{i}", single=True,
             locks=(key,))])[0])
    assert len([g for g in got if isinstance(g, int)]) == 1, got
    assert all(g is None or g == key or isinstance(g, int) for g in got)


def test_fenced_rows_take_their_token_with_the_lock(store: Store) -> None:
    key = job_lock("solo")
    fenced = [replace(row("solo", T0 + timedelta(seconds=n), single=True, locks=(key,)),
                      fenced=True) for n in range(3)]
    [first] = store.insert_guarded([fenced[0]])
    assert isinstance(first, Fenced) and first.token == 1
    rec = store.get_execution(first.execution_id)
    assert rec is not None and rec.fencing_token == 1
    # The lock is held: nothing written, and no token spent.
    assert store.insert_guarded([fenced[1]]) == [key]
    assert store.transition(first.execution_id, S.RUNNING, S.SUCCEEDED, finished_at=T0)
    [second] = store.insert_guarded([fenced[1]])
    assert isinstance(second, Fenced) and second.token == 2
    # A claim names the job whose token it takes, after the lock.
    [pending] = store.insert_guarded([row("solo", T0 + timedelta(seconds=9), single=True,
                                          locks=(), status=S.PENDING, attempt=2)])
    assert isinstance(pending, int)
    assert store.claim_guarded(pending, node_id="n2", fencing_token=None, started_at=T0,
                               locks=(key,), fence="solo") == key
    assert store.transition(second.execution_id, S.RUNNING, S.SUCCEEDED, finished_at=T0)
    assert store.claim_guarded(pending, node_id="n2", fencing_token=None, started_at=T0,
                               locks=(key,), fence="solo") == Fenced(pending, 3)
    rec = store.get_execution(pending)
    assert rec is not None and rec.fencing_token == 3


def test_racing_fenced_holders_take_rising_tokens(store_factory: StoreFactory) -> None:
    """Four stores take one single_instance lock over and over: in the order the lock
    changes hands, the tokens strictly rise (a token taken before the lock could come
    after a newer one)."""
    key, held = job_lock("solo"), threading.Lock()
    order: list[int] = []

    def take(s: Store, i: int) -> int:
        won = 0
        for n in range(40):
            at = T0 + timedelta(seconds=n * 4 + i)
            new = replace(row("solo", at, node=f"n{i}", single=True, locks=(key,)),
                          fenced=True)
            [got] = s.insert_guarded([new])
            if isinstance(got, Fenced):
                with held:  # (only the holder gets here: the order the lock is taken)
                    order.append(got.token)
                assert s.transition(got.execution_id, S.RUNNING, S.SUCCEEDED, finished_at=at)
                won += 1
        return won

    wins = race(store_factory, 4, take)
    assert sum(wins) == len(order) > 4
    assert order == sorted(set(order)), order


def test_recovery_releases_locks_of_nodes_that_are_gone(store: Store) -> None:
    # Nodes dead or alive by their heartbeat age alone (rows without a process identity;
    # killed processes: test_store_liveness.py); on PostgreSQL this store holds their
    # locks and the server stamps their heartbeats, so a ttl of 0 makes them old.
    store.register_node("n2", "h", 2, T0, ttl=TTL)
    store.insert_guarded([row("b", node="n2", locks=(job_lock("b"),))])
    store.insert_guarded([row("c", node="n3", locks=(job_lock("c"),))])  # no node row
    assert store.release_stale_locks(T0 + timedelta(seconds=1), TTL) == 1  # n3 unknown
    assert [(g.key, g.node_id) for g in store.guard_locks()] == [(job_lock("b"), "n2")]
    assert store.release_stale_locks(T0 + timedelta(days=1), timedelta(0)) == 1
    assert store.guard_locks() == []
    store.insert_guarded([row("d", node="n2", locks=(job_lock("d"),))])
    assert store.release_locks("n2") == 1
    assert store.guard_locks() == []


def test_the_locks_of_attempts_handed_to_recovery_stay_until_closed(store: Store) -> None:
    # A dead node's running attempt keeps its job held until recovery closes it (lost):
    # a newer fire cannot take the job in between (SPEC section 4, single_instance).
    [kept] = store.insert_guarded([row("k", node="n3", locks=(job_lock("k"),))])
    store.insert_guarded([row("f", node="n3", locks=(job_lock("f"),))])
    assert isinstance(kept, int)
    assert store.release_stale_locks(T0 + timedelta(seconds=1), TTL, keep=[kept]) == 1
    assert [(g.key, g.execution_id) for g in store.guard_locks()] == [(job_lock("k"), kept)]
    [newer] = store.insert_guarded([row("k", T0 + timedelta(minutes=1), node="n1",
                                        locks=(job_lock("k"),))])
    assert newer == job_lock("k")  # still held
    assert store.transition(kept, S.RUNNING, S.LOST, finished_at=T0)
    assert store.guard_locks() == []
    assert store.release_stale_locks(T0 + timedelta(seconds=2), TTL, keep=[kept]) == 0


def test_orphaned_executions_of_a_stopped_node(store: Store) -> None:
    store.register_node("n1", "h", 1, T0, ttl=TTL)
    store.register_node("n2", "h", 2, T0, ttl=TTL)
    [mine] = store.insert_guarded([row("a", node="n1", single=True, locks=(),
                                       status=S.PENDING, attempt=2)])
    store.insert_guarded([row("b", node="n1", locks=(), status=S.PENDING)])  # every_instance
    store.insert_guarded([row("c", node="n2", single=True, locks=(), status=S.PENDING)])
    assert store.orphaned_executions() == []
    store.unregister_node("n1")
    assert [r.id for r in store.orphaned_executions()] == [mine]


def test_a_freed_group_goes_to_its_oldest_waiter_not_to_whoever_asks_first(
        store: Store) -> None:
    """Issue 9, finding 8: ``late`` (due 2 s into ``blocker``'s run, on another node)
    waits for the group; when it frees, ``blocker``'s next instant (asked first, on its
    node) is refused the group until ``late`` has had it."""
    s = timedelta(seconds=1)
    [b1] = store.insert_guarded([row("blocker", T0, node="n1")])
    assert isinstance(b1, int)
    assert store.insert_guarded([row("late", T0 + 2 * s, node="n2")]) == [G]  # waits
    store.transition(b1, S.RUNNING, S.SUCCEEDED, finished_at=T0 + 4 * s)
    assert store.guard_locks() == []
    # The group is free, but an older fire waits for it: blocker's next instant is refused.
    assert store.insert_guarded([row("blocker", T0 + 5 * s, node="n1")]) == [G]
    assert store.list_executions(job_id="blocker", limit=None)[0].id == b1
    [late] = store.insert_guarded([row("late", T0 + 2 * s, node="n2")])
    assert isinstance(late, int)
    # It took the group and left the queue; blocker (now waiting itself) is next.
    assert store.insert_guarded([row("other", T0 + 9 * s, node="n3")]) == [G]
    store.transition(late, S.RUNNING, S.SUCCEEDED, finished_at=T0 + 5 * s)
    [b2] = store.insert_guarded([row("blocker", T0 + 5 * s, node="n1")])
    assert isinstance(b2, int)


def test_a_waiter_that_stopped_asking_or_whose_node_left_stops_counting(
        store: Store) -> None:
    from dataclasses import replace

    from cronctl.store.guardsql import WAITER_TTL

    [b1] = store.insert_guarded([row("blocker", T0, node="n1")])
    assert isinstance(b1, int)
    assert store.insert_guarded([row("gone", T0, node="n2")]) == [G]
    store.transition(b1, S.RUNNING, S.SUCCEEDED, finished_at=T0)
    nxt = row("blocker", T0 + timedelta(seconds=1), node="n1")
    # Asked within WAITER_TTL of the waiter's last try: still refused.
    assert store.insert_guarded([replace(nxt, created_at=T0 + WAITER_TTL / 2)]) == [G]
    # The waiter has not asked for longer than WAITER_TTL: it no longer holds the group.
    [b2] = store.insert_guarded([replace(nxt, created_at=T0 + WAITER_TTL * 2)])
    assert isinstance(b2, int)
    store.transition(b2, S.RUNNING, S.SUCCEEDED, finished_at=T0)
    # A node that leaves (its locks released) takes its waiters with it.
    sec, g2 = timedelta(seconds=1), group_lock("other")
    [h] = store.insert_guarded([row("holder", T0 + 3 * sec, node="n1", locks=(g2,))])
    assert isinstance(h, int)
    assert store.insert_guarded([row("early", T0 + sec, node="n2", locks=(g2,))]) == [g2]
    store.transition(h, S.RUNNING, S.SUCCEEDED, finished_at=T0)
    assert store.insert_guarded([row("late", T0 + 4 * sec, node="n1", locks=(g2,))]) == [g2]
    store.release_locks("n2")
    [b3] = store.insert_guarded([row("late", T0 + 4 * sec, node="n1", locks=(g2,))])
    assert isinstance(b3, int)


def test_a_scheduled_instant_a_peer_skipped_is_not_inserted_late(store: Store) -> None:
    """The SQLite disk-full nemesis of tests/chaos: a peer saw the job's guard held (its
    last final status still waiting for the database) and recorded the next instant
    ``overlap``; the node whose guard is free again inserts that instant late. The skip
    was first: the row is not written and its lock not taken; other instants and later
    attempts of the same occurrence are not affected."""
    from cronctl.store.writerecords import SkipRun

    solo = (job_lock("solo"),)
    [old] = store.insert_guarded([row("solo", T0, single=True, locks=solo)])
    assert isinstance(old, int)
    assert store.record_skips([SkipRun(job_id="solo", reason="overlap",
                                       first_at=T0 + TTL, last_at=T0 + TTL, count=1,
                                       node_id="n2", scope_node=None)]) == [True]
    assert store.transition(old, S.RUNNING, S.SUCCEEDED, finished_at=T0 + TTL)
    late = row("solo", T0 + TTL, single=True, locks=solo)
    assert store.insert_guarded([late]) == [None]
    assert [e.scheduled_at for e in store.list_executions(job_id="solo")] == [T0]
    assert store.guard_locks() == []
    [nxt] = store.insert_guarded([row("solo", T0 + 2 * TTL, single=True, locks=solo)])
    assert isinstance(nxt, int)
    assert store.transition(nxt, S.RUNNING, S.SUCCEEDED, finished_at=T0 + 2 * TTL)
    [retry] = store.insert_guarded([row("solo", T0 + TTL, single=True, locks=solo, attempt=2)])
    assert isinstance(retry, int)


def test_a_wake_of_single_instance_rows_is_decided_row_by_row_in_one_batch(
        store: Store) -> None:
    """Rows whose one guard is their job's lock are inserted in a few statements: each
    gets what the row-by-row path gives it (row exists: None; lock held: its key; instant
    skipped by a peer: None; else a fencing token after the job's last one), more rows
    than one statement's chunk included."""
    from cronctl.store.writerecords import SkipRun

    def solo(job: str, at: datetime = T0, **kw: object) -> NewExecution:
        return replace(row(job, at, single=True, locks=(job_lock(job),), **kw),  # type: ignore[arg-type]
                       fenced=True)

    [first] = store.insert_guarded([solo("busy", T0 - TTL)])  # still running on n1
    assert isinstance(first, Fenced)
    busy = first.execution_id
    assert store.next_fencing_token("later") == 1  # a token handed out before
    assert store.record_skips([SkipRun(job_id="peer", reason="overlap", first_at=T0,
                                       last_at=T0, count=1, node_id="n2",
                                       scope_node=None)]) == [True]
    [won] = store.insert_guarded([solo("taken", node="n2")])  # another node won it
    assert isinstance(won, Fenced)
    taken = won.execution_id
    many = [f"m{i:03d}" for i in range(450)]
    wake = [solo("taken"), solo("busy"), solo("peer"), solo("later"), *map(solo, many)]
    got = store.insert_guarded(wake)
    assert got[:3] == [None, job_lock("busy"), None]
    assert isinstance(got[3], Fenced) and got[3].token == 2
    assert all(isinstance(g, Fenced) and g.token == 1 for g in got[4:])
    assert store.list_executions(job_id="peer") == []
    [retry] = store.insert_guarded([solo("peer", attempt=2)])
    assert isinstance(retry, Fenced)  # a retry of the skipped instant is not refused
    got.append(retry)
    locks = {g.key: g.execution_id for g in store.guard_locks()}
    assert locks[job_lock("busy")] == busy and locks[job_lock("taken")] == taken
    for g in got[3:]:
        assert isinstance(g, Fenced)
        written = store.get_execution(g.execution_id)
        assert written is not None and written.fencing_token == g.token
    assert len(locks) == 2 + len(many) + 2
    assert [e.attempt for e in store.list_executions(job_id="peer")] == [2]
    assert [e.id for e in store.list_executions(job_id="busy")] == [busy]


def test_nodes_racing_for_one_wake_of_single_instance_rows_each_job_once(
        store_factory: StoreFactory) -> None:
    """Three nodes insert the same 300 instants (each in its own order): every job's row
    and lock go to exactly one of them, the others get None, and nobody deadlocks."""
    jobs = [f"r{i:03d}" for i in range(300)]

    def wake(s: Store, n: int) -> list[int | Fenced | str | None]:
        order = jobs[n::3] + jobs[:n:3] + [j for k, j in enumerate(jobs) if k % 3 != n % 3]
        return s.insert_guarded([replace(row(j, single=True, node=f"n{n}",
                                             locks=(job_lock(j),)), fenced=True)
                                 for j in order])

    results = race(store_factory, 3, wake)
    winners = sum(isinstance(g, Fenced) for got in results for g in got)
    assert winners == len(jobs)
    assert all(g is None or isinstance(g, Fenced) for got in results for g in got)
    store = store_factory()
    assert len(store.guard_locks()) == len(jobs)
    assert sum(len(store.list_executions(job_id=j)) for j in jobs) == len(jobs)
