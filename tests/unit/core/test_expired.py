"""``expired`` (SPEC section 4): a scheduled fire that waited for a concurrency slot, a
queue_one turn or its serial group longer than ``misfire_threshold`` is not started."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import Enqueue, Fire, JobState, SchedulerCore, Skip, SkipReason, WaitReason
from cronctl.jobs.model import ExecutionStatus, MisfirePolicy, Origin, OverlapPolicy

OK = ExecutionStatus.SUCCEEDED
EXPIRED = SkipReason.EXPIRED


def _slot_wait(done_s: float) -> tuple[SchedulerCore, Fire, list[Fire], list[Skip]]:
    """``long`` holds the only slot from 3600 until ``done_s``; ``w`` waits for it."""
    core = SchedulerCore([job("long", every=3600), job("w", every=3600)],
                         max_concurrent_jobs=1)
    core.start(T0)
    d = core.tick(at(3600))
    [first] = of(d, Fire)
    assert [(e.job_id, e.reason) for e in of(d, Enqueue)] == [("w", WaitReason.SLOT)]
    d = core.on_complete(first.key, OK, None, at(done_s))
    return core, first, of(d, Fire), of(d, Skip)


def test_a_fire_waiting_for_a_slot_longer_than_the_threshold_expires() -> None:
    core, _, fires, skips = _slot_wait(3660.001)
    assert fires == []
    assert [(s.job_id, s.planned, s.origin, s.reason) for s in skips] == [
        ("w", at(3600), Origin.CRON, EXPIRED)]
    assert core.running == 0 and core.waiting == 0
    assert {f.job_id for f in of(core.tick(at(7200)), Fire)} == {"long"}  # w is not stuck
    assert core.waiting == 1


def test_a_fire_waiting_exactly_the_threshold_still_starts() -> None:
    _, _, fires, skips = _slot_wait(3660)
    assert [f.job_id for f in fires] == ["w"] and skips == []


def test_a_group_waiter_that_expired_is_passed_over_for_the_next_one() -> None:
    short = timedelta(seconds=5)
    core = SchedulerCore([job("a", every=3600, serial_group="g"),
                          job("b", every=3600, serial_group="g", misfire_threshold=short),
                          job("c", every=3600, anchor=at(30), serial_group="g")])
    core.start(T0)
    [a] = of(core.tick(at(3600)), Fire)
    core.tick(at(3630))  # c joins the queue behind b
    d = core.on_complete(a.key, OK, None, at(3640))
    assert [(s.job_id, s.reason) for s in of(d, Skip)] == [("b", EXPIRED)]
    assert [f.job_id for f in of(d, Fire)] == ["c"]  # c waited 10 s < 60 s


def test_a_queue_one_fire_that_waited_too_long_expires() -> None:
    core = SchedulerCore([job("q", every=100, overlap_policy=OverlapPolicy.QUEUE_ONE)])
    core.start(T0)
    [first] = of(core.tick(at(100)), Fire)
    assert of(core.tick(at(200)), Enqueue)[0].reason is WaitReason.QUEUE_ONE
    d = core.on_complete(first.key, OK, None, at(261))  # the queued one waited 61 s
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [(at(200), EXPIRED)]
    assert of(d, Fire) == []
    assert [f.planned for f in of(core.tick(at(300)), Fire)] == [at(300)]


def test_retries_manual_fires_and_catch_ups_waiting_for_their_job_never_expire() -> None:
    core = SchedulerCore([job("long", every=3600), job("w", every=3600,
                                                       retry_backoff=timedelta(seconds=1))],
                         max_concurrent_jobs=1)
    core.start(T0)
    [long] = of(core.tick(at(3600)), Fire)
    [w] = of(core.on_complete(long.key, OK, None, at(3601)), Fire)
    core.on_complete(w.key, ExecutionStatus.FAILED, "boom", at(3602))
    _, d = core.trigger("long", at(3602.5))
    [manual] = of(d, Fire)
    core.tick(at(3603))  # w's retry waits for the slot
    d = core.on_complete(manual.key, OK, None, at(3800))
    assert of(d, Skip) == []
    assert [(f.job_id, f.attempt) for f in of(d, Fire)] == [("w", 2)]
    # fire_all catch-ups wait for each other (for their job): not a slot wait
    core = SchedulerCore([job("c", every=1, misfire_policy=MisfirePolicy.FIRE_ALL,
                              catchup_limit=3)])
    [c1] = of(core.start(at(300), {"c": JobState(cursor=T0)}), Fire)
    [c2] = of(core.on_complete(c1.key, OK, None, at(400)), Fire)
    assert (c2.planned, c2.origin) == (at(299), Origin.MISFIRE)
