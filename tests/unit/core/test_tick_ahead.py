"""Deciding a crowded instant ahead of time (``tick_ahead``, ``crowded``): the same
decisions ``tick`` makes at the instant, timers left alone."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of
from hypothesis import given, settings
from hypothesis import strategies as st

from cronctl.core import Abandon, Enqueue, Fire, SchedulerCore, WaitReason


def _core(n: int, slots: int, **kw: object) -> SchedulerCore:
    core = SchedulerCore([job(f"j{i:02d}", every=10, **kw) for i in range(n)],  # type: ignore[arg-type]
                         max_concurrent_jobs=slots)
    core.start(T0)
    return core


def test_crowded_counts_the_fires_due_at_the_instant() -> None:
    core = _core(5, 2)
    assert core.next_planned() == at(10)
    assert core.crowded(at(10), 2) == 5 and core.crowded(at(10), 4) == 5
    assert core.crowded(at(10), 5) == 0
    assert core.crowded(at(9.5), 2) == 0  # none due by then


def test_tick_ahead_decides_as_tick_at_the_instant_would() -> None:
    ahead, now = _core(5, 2), _core(5, 2)
    early = ahead.tick_ahead(at(10), mono=10.0)
    on_time = now.tick(at(10), mono=10.0)
    assert [(type(a), a.job_id) for a in early.actions] == [
        (type(a), a.job_id) for a in on_time.actions]
    fires = of(early, Fire)
    assert [f.job_id for f in fires] == ["j00", "j01"] and all(f.due == at(10) for f in fires)
    assert [(e.job_id, e.reason) for e in of(early, Enqueue)] == [
        (f"j{i:02d}", WaitReason.SLOT) for i in (2, 3, 4)]
    assert early.next_wake == at(20) and ahead.next_planned() == at(20)


def test_tick_ahead_handles_at_most_a_budget() -> None:
    core = _core(5, 10)
    assert [f.job_id for f in of(core.tick_ahead(at(10), mono=9.8, budget=3), Fire)] == [
        "j00", "j01", "j02"]
    assert core.next_planned() == at(10)  # two left for the next slice
    assert len(of(core.tick_ahead(at(10), mono=9.8, budget=3), Fire)) == 2
    assert core.next_planned() == at(20)


def test_tick_ahead_leaves_timers_to_tick() -> None:
    core = _core(1, 10, timeout=timedelta(seconds=1))
    [fire] = of(core.tick(at(10), mono=10.0), Fire)
    # The attempt's deadline (11) is past by 19.9, but only tick() acts on timers.
    assert not of(core.tick_ahead(at(20), mono=19.9), Abandon)
    assert fire.key in core.active_keys()
    assert of(core.tick(at(11.5), mono=11.5), Abandon)


@given(periods=st.lists(st.integers(1, 9), min_size=0, max_size=60),
       horizon=st.floats(0, 30), more_than=st.integers(0, 40))
@settings(max_examples=150, deadline=None)
def test_crowded_walks_only_the_due_part_of_the_heap_and_counts_exactly(
        periods: list[int], horizon: float, more_than: int) -> None:
    # The walk stops at entries not due; the count must equal a scan of every entry.
    core = SchedulerCore([job(f"j{i:02d}", every=p) for i, p in enumerate(periods)],
                         max_concurrent_jobs=4)
    core.start(T0)
    core.tick(at(horizon / 3))  # entries re-pushed at different instants
    until = at(horizon)
    due = sum(1 for entry in core._heap if entry[0] <= until)
    assert core.crowded(until, more_than) == (due if due > more_than else 0)
