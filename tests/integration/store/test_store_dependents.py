"""Dependents' decisions in the store (SPEC section 8): the Store contract on SQLite and
PostgreSQL. One decision per (dependent, instant), cluster-wide: a request to run it or
an upstream skip record; chained waits; requests a stopped node had taken."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from conftest import StoreFactory

from cronctl.jobs.model import Origin
from cronctl.store import Store

T = datetime(2026, 12, 3, 4, 0, tzinfo=UTC)
NOW = T + timedelta(seconds=5)


def test_one_decision_per_instant_from_racing_nodes(store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(4)]
    won: list[bool] = []
    barrier = threading.Barrier(len(stores))

    def decide(i: int) -> None:
        barrier.wait()
        skip = ("upstream", "upstream extract@t failed") if i % 2 else None
        won.append(stores[i].decide_dependent("load", T, f"n{i}", skip=skip, now=NOW))

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False, False, False, True]
    store = stores[0]
    requests = store.list_triggers("load", since=T, until=T)
    skips = store.list_skips(job_id="load")
    assert len(requests) == 1 and requests[0].origin is Origin.DEPENDENCY
    if requests[0].done:  # the skip won: its record, written with it, names the parent
        assert [(s.reason, s.detail, s.scope_node) for s in skips] == [
            ("upstream", "upstream extract@t failed", None)]
        assert store.take_triggers("n9") == []
    else:  # the run won: a scheduler takes it, and no skip record exists
        assert skips == []
        [taken] = store.take_triggers("n9")
        assert (taken.job_id, taken.scheduled_at) == ("load", T)


def test_chain_wait_release_and_never_twice(store: Store) -> None:
    assert store.decide_dependent("load", T, "n1", skip=("upstream", "missed"), now=NOW)
    assert store.wait_chain("load", T, now=NOW)  # a skipped instant may wait again
    assert store.take_triggers("n1") == []  # a waiting request is taken by nobody
    [waiting] = store.chain_waits({"load"})
    assert store.release_chain(waiting.id, "n1")
    assert not store.release_chain(waiting.id, "n2")  # decided once
    [taken] = store.take_triggers("n2")
    store.complete_trigger(taken.id, execution_id=7)
    assert not store.wait_chain("load", T, now=NOW)  # it ran: never again
    assert store.chain_waits({"load"}) == []


def test_a_stranded_request_is_given_back(store: Store) -> None:
    assert store.decide_dependent("load", T, "n1", now=NOW)
    [taken] = store.take_triggers("ghost")
    [stranded] = store.stranded_dependency_requests({"load"})
    assert stranded.taken_by == "ghost"
    assert not store.untake_trigger(taken.id, "someone-else")
    assert store.untake_trigger(taken.id, "ghost")
    [again] = store.take_triggers("n1")
    assert again.id == taken.id
