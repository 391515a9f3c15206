"""Decisions when a cluster-wide guard (a lock row) is held on another node: fed
instants, never a sleep. ``blocked(overlap=True)`` is the job's own single_instance lock;
``overlap=False`` its serial group's."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import Enqueue, Fire, SchedulerCore, Skip, SkipReason, WaitReason
from cronctl.jobs.model import ExecutionStatus, Mode, Origin

OK = ExecutionStatus.SUCCEEDED


def test_overlap_lock_held_skips_a_cron_fire_and_frees_its_guards() -> None:
    core = SchedulerCore([job("solo", mode=Mode.SINGLE_INSTANCE)])
    core.start(T0)
    [fire] = of(core.tick(at(1)), Fire)
    d = core.blocked(fire.key, at(1), at(1.5), overlap=True)
    assert [(s.job_id, s.planned, s.reason) for s in of(d, Skip)] == [
        ("solo", at(1), SkipReason.OVERLAP)]
    assert core.running == 0 and core.waiting == 0
    assert core.tick(at(1.5)).actions == ()  # nothing deferred
    assert [f.planned for f in of(core.tick(at(2)), Fire)] == [at(2)]  # not in flight


def test_overlap_lock_held_defers_a_manual_fire() -> None:
    core = SchedulerCore([job("solo", every=3600, mode=Mode.SINGLE_INSTANCE)])
    core.start(T0)
    _, d = core.trigger("solo", at(1))
    [fire] = of(d, Fire)
    d = core.blocked(fire.key, at(1), at(1.5), overlap=True)
    assert of(d, Skip) == [] and of(d, Fire) == [] and core.running == 0
    assert core.tick(at(1.4)).actions == ()
    [again] = of(core.tick(at(1.5)), Fire)
    assert (again.occurrence_id, again.attempt, again.origin) == (
        fire.occurrence_id, 1, Origin.MANUAL)


def test_group_held_elsewhere_defers_then_retries_the_same_attempt() -> None:
    core = SchedulerCore([job("a", every=10, serial_group="g")])
    core.start(T0)
    [fire] = of(core.tick(at(10)), Fire)
    d = core.blocked(fire.key, at(10), at(10.5), overlap=False)
    assert d.actions == () and core.running == 0
    assert d.next_wake == at(10.5)
    [again] = of(core.tick(at(10.5)), Fire)
    assert (again.planned, again.attempt, again.occurrence_id) == (
        at(10), 1, fire.occurrence_id)


def test_deferred_fire_keeps_its_job_in_flight_so_cron_fires_are_skipped() -> None:
    core = SchedulerCore([job("a", serial_group="g")])
    core.start(T0)
    [fire] = of(core.tick(at(1)), Fire)
    core.blocked(fire.key, at(1), at(2.5), overlap=False)
    d = core.tick(at(2))
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [(at(2), SkipReason.OVERLAP)]
    assert [f.planned for f in of(core.tick(at(2.5)), Fire)] == [at(1)]


def test_group_blocked_elsewhere_keeps_its_place_ahead_of_local_waiters() -> None:
    # FIFO across the group (issue 9 finding 8): the blocked fire is the oldest waiter;
    # the local waiters would find the same lock held, and stay queued behind it.
    core = SchedulerCore([job("a", every=10, serial_group="g"),
                          job("b", every=10, serial_group="g"),
                          job("c", every=10, serial_group="g")])
    core.start(T0)
    d = core.tick(at(10))
    [first] = of(d, Fire)
    assert [e.job_id for e in of(d, Enqueue) if e.reason is WaitReason.GROUP] == ["b", "c"]
    d = core.blocked(first.key, at(10), at(10.5), overlap=False)
    assert of(d, Fire) == [] and core.running == 0 and core.waiting == 2
    [again] = of(core.tick(at(10.5)), Fire)
    assert (again.job_id, again.planned, again.occurrence_id) == (
        "a", at(10), first.occurrence_id)
    [second] = of(core.on_complete(again.key, OK, None, at(11)), Fire)
    assert second.job_id == "b"
    [third] = of(core.on_complete(second.key, OK, None, at(12)), Fire)
    assert third.job_id == "c"


def test_a_newer_fire_of_the_group_queues_behind_a_fire_blocked_elsewhere() -> None:
    core = SchedulerCore([job("blocker", every=5, serial_group="g"),
                          job("late", every=5, anchor=at(2), serial_group="g")])
    core.start(T0)
    [late] = of(core.tick(at(2)), Fire)
    core.blocked(late.key, at(2), at(5), overlap=False)
    # the blocker's instant at 5 pops first (same due time, pushed earlier): it waits
    d = core.tick(at(5))
    [again] = of(d, Fire)
    assert (again.job_id, again.planned) == ("late", at(2))
    assert [(e.job_id, e.planned, e.reason) for e in of(d, Enqueue)] == [
        ("blocker", at(5), WaitReason.GROUP)]
    [blocker] = of(core.on_complete(again.key, OK, None, at(5.2)), Fire)
    assert (blocker.job_id, blocker.planned) == ("blocker", at(5))


def test_an_overlap_block_frees_the_group_for_the_next_waiter() -> None:
    # blocked by its own job's lock (it runs on another node), a manual fire waits for its
    # job, not for the group: the group's next waiter goes first
    core = SchedulerCore([job("solo", every=3600, mode=Mode.SINGLE_INSTANCE, serial_group="g"),
                          job("b", every=3600, serial_group="g")])
    core.start(T0)
    _, d = core.trigger("solo", at(1))
    [manual] = of(d, Fire)
    _, d = core.trigger("b", at(1))
    assert of(d, Enqueue)[0].reason is WaitReason.GROUP
    [b] = of(core.blocked(manual.key, at(1), at(1.5), overlap=True), Fire)
    assert b.job_id == "b"


def test_group_blocked_elsewhere_longer_than_misfire_threshold_expires() -> None:
    core = SchedulerCore([job("a", every=3600, serial_group="g",
                              misfire_threshold=timedelta(seconds=2)),
                          job("b", every=3600, serial_group="g")])
    core.start(T0)
    d = core.tick(at(3600))
    [a] = of(d, Fire)
    now = 3600.0
    for _ in range(10):  # the group stays held on another node
        core.blocked(a.key, at(now), at(now + 0.5), overlap=False)
        now += 0.5
        d = core.tick(at(now))
        fires = of(d, Fire)
        if [f.job_id for f in fires] != ["a"]:
            break
        a = fires[0]
    # 2.5 s after it first found the group held: a is skipped (expired), b gets the group
    assert now == 3602.5
    assert [(s.job_id, s.planned, s.reason) for s in of(d, Skip)] == [
        ("a", at(3600), SkipReason.EXPIRED)]
    assert [f.job_id for f in fires] == ["b"]


def test_a_manual_fire_blocked_elsewhere_never_expires() -> None:
    core = SchedulerCore([job("a", every=3600, serial_group="g",
                              misfire_threshold=timedelta(seconds=1))])
    core.start(T0)
    _, d = core.trigger("a", at(1))
    [fire] = of(d, Fire)
    core.blocked(fire.key, at(1), at(5), overlap=False)
    [again] = of(core.tick(at(5)), Fire)
    assert again.origin is Origin.MANUAL


def test_blocked_unknown_key_is_ignored() -> None:
    core = SchedulerCore([job()])
    core.start(T0)
    assert core.blocked(99, at(1), at(2), overlap=True).actions == ()
    [fire] = of(core.tick(at(1)), Fire)
    core.on_complete(fire.key, OK, None, at(1.1))
    assert core.blocked(fire.key, at(1.2), at(2), overlap=False).actions == ()


def test_overlap_lock_held_defers_a_misfire_catch_up_fire() -> None:
    # fire_all replays several instants back to back under the job's own lock; a
    # catch-up fire that finds the lock still held must wait, not be dropped.
    from cronctl.core import JobState
    from cronctl.jobs.model import MisfirePolicy

    core = SchedulerCore([job("solo", every=60, mode=Mode.SINGLE_INSTANCE,
                              misfire_policy=MisfirePolicy.FIRE_ALL)])
    d = core.start(at(300), {"solo": JobState(cursor=at(0))})
    [fire] = of(d, Fire)
    assert fire.origin is Origin.MISFIRE
    d = core.blocked(fire.key, at(300), at(300.5), overlap=True)
    assert of(d, Skip) == [] and of(d, Fire) == []
    [again] = of(core.tick(at(300.5)), Fire)
    assert (again.planned, again.origin, again.attempt) == (fire.planned, Origin.MISFIRE, 1)
