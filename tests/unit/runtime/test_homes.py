"""Which node of a cluster tries a single_instance job's instants first (runtime.homes)."""

from __future__ import annotations

import collections
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from cronctl.jobs.model import JobDefinition, Mode, PythonTarget
from cronctl.runtime.homes import TAKEOVER, Homes, home_of


def _job(job_id: str, mode: Mode = Mode.SINGLE_INSTANCE) -> JobDefinition:
    return JobDefinition(id=job_id, target=PythonTarget("m", "f"), cron="* * * * * *",
                         mode=mode)


def test_every_node_that_sees_the_same_live_nodes_names_the_same_home() -> None:
    nodes = {"n1", "n2", "n3"}
    views = [Homes(n) for n in sorted(nodes)]
    for h in views:
        h.live_are(nodes)
    for i in range(300):
        job = _job(f"j{i}")
        delays = [h.delay(job) for h in views]
        assert sorted(delays) == [timedelta(0), TAKEOVER, TAKEOVER], (job.id, delays)
        home = home_of(job.id, nodes)
        assert views[sorted(nodes).index(home)].delay(job) == timedelta(0)


def test_homes_spread_over_the_nodes_and_move_only_from_a_node_that_left() -> None:
    jobs = [f"job-{i}" for i in range(3000)]
    three = {j: home_of(j, ["a", "b", "c"]) for j in jobs}
    counts = collections.Counter(three.values())
    assert all(800 < n < 1200 for n in counts.values()), counts
    two = {j: home_of(j, ["a", "b"]) for j in jobs}
    assert all(two[j] == three[j] for j in jobs if three[j] != "c")


def test_alone_not_yet_seen_or_a_job_every_node_runs_is_tried_on_time() -> None:
    h = Homes("n1")
    job = _job("x")
    assert h.delay(job) == timedelta(0)  # no check yet
    h.live_are(["n1"])
    assert h.delay(job) == timedelta(0)  # alone
    h.live_are(["n2", "n3"])
    assert h.delay(job) == timedelta(0)  # this node not seen alive: it tries on time
    h.live_are(["n1", "n2"])
    assert h.delay(_job("x", Mode.EVERY_INSTANCE)) == timedelta(0)
    before = h.delay(job)
    h.live_are(["n1"])  # the other node left: this one is every job's home
    assert h.delay(job) == timedelta(0)
    h.live_are(["n1", "n2"])
    assert h.delay(job) == before


@given(job_id=st.text(min_size=1, max_size=40),
       nodes=st.sets(st.text(min_size=1, max_size=12), min_size=1, max_size=6))
@settings(max_examples=200, deadline=None)
def test_the_home_is_one_of_the_nodes_whatever_their_order(job_id: str,
                                                          nodes: set[str]) -> None:
    ordered = sorted(nodes)
    home = home_of(job_id, ordered)
    assert home in nodes and home_of(job_id, reversed(ordered)) == home


def test_the_core_asks_only_while_this_node_has_peers() -> None:
    from cronctl.core import SchedulerCore

    core = SchedulerCore([_job("x")])
    h = Homes("n1")
    h.attach(core)
    assert core.away is None
    h.live_are(["n1", "n2"])
    assert core.away == h.delay
    h.live_are(["n1"])
    assert core.away is None
