"""The skip ledger and per-node cursors: the Store contract on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from conftest import StoreFactory

from cronctl.store import Store
from cronctl.store.writerecords import SkipRun

T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)


def run(first: datetime, count: int = 1, *, job: str = "job", reason: str = "overlap",
        node: str = "n1", scope: str | None = None) -> SkipRun:
    return SkipRun(job_id=job, reason=reason, first_at=first,
                   last_at=first + (count - 1) * S, count=count, node_id=node,
                   scope_node=scope)


def test_a_run_is_recorded_once_and_listed_newest_first(store: Store) -> None:
    assert store.record_skips([run(T0), run(T0 + 5 * S, 3, reason="misfire")]) == [True, True]
    assert store.record_skips([run(T0)]) == [False]  # another node, same decision
    rows = store.list_skips(job_id="job")
    assert [(r.first_at, r.last_at, r.count, r.reason) for r in rows] == [
        (T0 + 5 * S, T0 + 7 * S, 3, "misfire"), (T0, T0, 1, "overlap")]
    assert rows[0].scope_node is None and rows[0].node_id == "n1"
    assert rows[0].created_at.tzinfo is not None


def test_a_longer_run_from_the_same_start_extends_it(store: Store) -> None:
    store.record_skips([run(T0, 3, reason="misfire")])
    assert store.record_skips([run(T0, 5, reason="misfire", node="n2")]) == [True]
    assert store.record_skips([run(T0, 2, reason="misfire", node="n3")]) == [False]
    [row] = store.list_skips()
    assert (row.count, row.last_at, row.node_id) == (5, T0 + 4 * S, "n1")


def test_every_instance_scopes_are_separate(store: Store) -> None:
    assert store.record_skips([run(T0, scope="n1"), run(T0, node="n2", scope="n2")]) == [
        True, True]
    assert {r.scope_node for r in store.list_skips()} == {"n1", "n2"}


def test_window_and_covering_queries(store: Store) -> None:
    store.record_skips([run(T0, 10), run(T0 + 20 * S), run(T0, job="other")])
    assert [r.count for r in store.list_skips(job_id="job", since=T0 + 9 * S,
                                              until=T0 + 9 * S)] == [10]
    assert store.list_skips(job_id="job", since=T0 + 10 * S, until=T0 + 19 * S) == []
    assert len(store.list_skips(limit=2)) == 2 and len(store.list_skips(limit=None)) == 3
    [covering] = store.skips_covering("job", T0 + 4 * S)
    assert covering.count == 10
    assert store.skips_covering("job", T0 + 15 * S) == []


def test_racing_nodes_record_one_row(store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(4)]
    results: list[list[bool]] = []
    barrier = threading.Barrier(len(stores))

    def go(s: Store, i: int) -> None:
        barrier.wait()
        results.append(s.record_skips([run(T0, node=f"n{i}")]))

    threads = [threading.Thread(target=go, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r[0] for r in results) == [False, False, False, True]
    assert len(stores[0].list_skips()) == 1


def test_nodes_recording_the_same_runs_in_opposite_orders_do_not_deadlock(
        store_factory: StoreFactory) -> None:
    """Each node's core skips the same instants of a late set at start: three nodes
    record the same 200 runs, each in its own order (a deadlock on PostgreSQL before the
    store took them in key order: bench_scale cluster); each run is recorded once, and
    each node's answers follow its own order."""
    from test_store_contract import race

    runs = [run(T0, job=f"j{i:03d}") for i in range(200)]
    orders = [runs, runs[::-1], runs[100:] + runs[:100]]
    results = race(store_factory, 3, lambda s, n: (orders[n], s.record_skips(orders[n])))
    won = {r.job_id for order, got in results for r, ok in zip(order, got, strict=True) if ok}
    assert won == {r.job_id for r in runs}
    assert sum(ok for _, got in results for ok in got) == len(runs)
    assert len(store_factory().list_skips(limit=None)) == len(runs)


def test_node_cursors_are_per_node_and_never_move_back(store: Store) -> None:
    store.advance_cursors({"job": T0}, node_id="a", node_cursors={"job": T0})
    store.advance_cursors({}, node_id="b", node_cursors={"job": T0 - 10 * S})
    store.advance_cursors({}, node_id="a", node_cursors={"job": T0 - 5 * S})
    assert store.node_cursors("a") == {"job": T0}
    assert store.node_cursors("b") == {"job": T0 - 10 * S}
    assert store.node_cursors("c") == {}
    assert store.job_states()["job"][0] == T0


def test_an_instant_that_ran_is_not_recorded_as_skipped(store: Store) -> None:
    """A node cut off from the database decides an instant another node ran (the
    frozen-tcp-path and SQLite disk-full nemeses of tests/chaos): its skip is refused."""
    from test_store_contract import must_insert

    from cronctl.jobs.model import ExecutionStatus

    ran = ExecutionStatus.RUNNING
    must_insert(store, at=T0 + 2 * S, status=ran)  # single_instance: it ran somewhere
    must_insert(store, at=T0 + 7 * S, scope="n1", status=ExecutionStatus.SUCCEEDED)
    must_insert(store, at=T0 + 3 * S)  # pending (a waiter): it may still expire
    assert store.record_skips([run(T0 + 2 * S), run(T0, 3, reason="misfire", node="n2"),
                               run(T0 + 7 * S, scope="n1"), run(T0 + 7 * S, scope="n2"),
                               run(T0 + 3 * S)]) == [False, False, False, True, True]
    assert {(r.first_at, r.scope_node) for r in store.list_skips()} == {
        (T0 + 7 * S, "n2"), (T0 + 3 * S, None)}
    store.record_skips([run(T0 + 8 * S)])
    must_insert(store, at=T0 + 9 * S, status=ran)
    assert store.record_skips([run(T0 + 8 * S, 3)]) == [False]  # nor its extension
    assert [r.count for r in store.list_skips() if r.first_at == T0 + 8 * S] == [1]
