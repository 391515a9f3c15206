"""SPEC section 4 "Misfires": the instants after the cursor up to now are ONE set, and
every instant of it that does not fire is reported as a compact skip run (``misfire``).
Issue 9 finding 4 is the regression: a per-second job with no scheduler for 120 s."""

from __future__ import annotations

import time
from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import (
    AdvanceCursor,
    Decision,
    Enqueue,
    Fire,
    JobState,
    Missed,
    RecoveredExecution,
    SchedulerCore,
    Skip,
    SkipReason,
    WaitReason,
    jitter_offset,
)
from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, MisfirePolicy, Origin, OverlapPolicy

OK = ExecutionStatus.SUCCEEDED
MISFIRE = SkipReason.MISFIRE
DOWN = {"j": JobState(cursor=T0)}  # handled up to T0; no scheduler ran since


def _serially(core: SchedulerCore, d: Decision, now_s: float) -> list[Fire]:
    """Run the fires of ``d`` one after another, each ending 0.1 s after it starts, ticking
    the clock on as they go; returns them in start order with the skips seen meanwhile."""
    started: list[Fire] = []
    todo = of(d, Fire)
    t = now_s
    while todo:
        f = todo.pop(0)
        started.append(f)
        t += 0.1
        todo += of(core.on_complete(f.key, OK, None, at(t)), Fire)
    return started


def _ran_at_one() -> SchedulerCore:
    """A per-second job started at 0.5 whose instant 1 fired on time and ended at 1.5."""
    core = SchedulerCore([job(every=1)])
    core.start(at(0.5))
    [first] = of(core.tick(at(1)), Fire)
    core.on_complete(first.key, OK, None, at(1.5))
    return core


def test_fire_all_runs_the_newest_catchup_limit_just_before_now_finding_4() -> None:
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_ALL, catchup_limit=5)])
    d = core.start(at(120.4), DOWN)
    [missed] = of(d, Missed)
    assert (missed.count, missed.dropped, missed.newest) == (120, 115, at(120))
    assert of(d, Skip) == [Skip("j", at(1), Origin.MISFIRE, MISFIRE, at(115), 115)]
    fires = _serially(core, d, 120.4)
    assert [f.planned for f in fires] == [at(s) for s in range(116, 121)]  # oldest first
    assert {f.origin for f in fires} == {Origin.MISFIRE}
    # nothing older fires later, nor is anything of the set dropped as overlap
    d = core.tick(at(121))
    assert [f.planned for f in of(d, Fire)] == [at(121)] and of(d, Skip) == []


def test_a_catch_up_fire_never_drops_the_next_one_as_overlap() -> None:
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_ALL, catchup_limit=5)])
    d = core.start(at(120.4), DOWN)
    [first] = of(d, Fire)
    assert [(e.planned, e.reason) for e in of(d, Enqueue)] == [
        (at(s), WaitReason.JOB) for s in range(117, 121)]
    # the catch-up runs 3 s: on-time instants meanwhile are overlap skips, the queued
    # catch-up fires are not
    skips = [s for t in (121, 122, 123) for s in of(core.tick(at(t)), Skip)]
    assert [(s.planned, s.reason) for s in skips] == [
        (at(121), SkipReason.OVERLAP), (at(122), SkipReason.OVERLAP),
        (at(123), SkipReason.OVERLAP)]
    rest = _serially(core, core.on_complete(first.key, OK, None, at(123.4)), 123.4)
    assert [f.planned for f in rest] == [at(s) for s in range(117, 121)]


def test_skip_fires_nothing_of_the_set_not_one_late_fire_finding_4() -> None:
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.SKIP)])
    d = core.start(at(120.4), DOWN)
    assert of(d, Fire) == []
    assert of(d, Skip) == [Skip("j", at(1), Origin.MISFIRE, MISFIRE, at(120), 120)]
    assert of(d, AdvanceCursor) == [AdvanceCursor("j", at(120))]
    assert core.tick(at(120.5)).actions == ()  # no fire 59.6 s late
    [f] = of(core.tick(at(121)), Fire)
    assert (f.planned, f.origin) == (at(121), Origin.CRON)


def test_fire_now_runs_the_newest_instant_not_one_a_minute_old_finding_4() -> None:
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_NOW)])
    d = core.start(at(120.4), DOWN)
    [f] = of(d, Fire)
    assert (f.planned, f.origin, f.attempt) == (at(120), Origin.MISFIRE, 1)
    assert of(d, Skip) == [Skip("j", at(1), Origin.MISFIRE, MISFIRE, at(119), 119)]
    assert of(d, Missed)[0].dropped == 119


def test_a_set_whose_oldest_is_late_by_at_most_the_threshold_fires_late_oldest_first() -> None:
    for policy in MisfirePolicy:
        core = SchedulerCore([job(every=1, misfire_policy=policy,
                                  overlap_policy=OverlapPolicy.ALLOW)],
                             max_concurrent_jobs=100)
        d = core.start(at(60), DOWN)  # the oldest (1) is 59 s late: nothing was missed
        assert d.actions == () and d.next_wake == at(1), policy
        fires = of(core.tick(at(60)), Fire)
        assert [f.planned for f in fires] == [at(s) for s in range(1, 61)], policy
        assert {f.origin for f in fires} == {Origin.CRON}


def test_a_late_set_dropped_behind_its_own_oldest_fire_is_misfire_not_overlap() -> None:
    # Overlap applies to a set that was not missed, but nothing ran while its instants
    # were due: those dropped behind the set's own late fire are recorded misfire, with
    # what happened, never "the previous execution still ran".
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_ALL)])
    core.start(at(30), DOWN)
    d = core.tick(at(30))
    [first] = of(d, Fire)
    assert first.planned == at(1)
    skips = of(d, Skip)
    assert [(s.planned, s.reason) for s in skips] == [
        (at(s), SkipReason.MISFIRE) for s in range(2, 31)]
    assert all(s.origin is Origin.CRON for s in skips)
    assert skips[0].detail is not None and "was still running" in skips[0].detail
    # instants due after the set formed, while its fire still runs, are plain overlap
    d = core.tick(at(31))
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [(at(31), SkipReason.OVERLAP)]
    core.on_complete(first.key, OK, None, at(31.5))
    assert [f.planned for f in of(core.tick(at(32)), Fire)] == [at(32)]


def test_a_recovered_attempt_still_overlaps_the_late_set_after_it() -> None:
    # the node died while attempt 1 of 10 s ran; on start its next attempt runs first, and
    # the late set 20, 30 is dropped behind an execution of an older occurrence: overlap
    core = SchedulerCore([job(every=10, max_attempts=2)])
    row = RecoveredExecution(4, "j", at(10), 1, Origin.CRON, ExecutionStatus.RUNNING)
    d = core.start(at(31), {"j": JobState(cursor=at(10))}, [row])
    assert [(f.planned, f.attempt) for f in of(d, Fire)] == [(at(10), 2)]
    d = core.tick(at(31))
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [
        (at(20), SkipReason.OVERLAP), (at(30), SkipReason.OVERLAP)]


def test_instants_handled_late_by_a_held_up_scheduler_are_misfire_not_overlap() -> None:
    # The scheduler thread was held up (a blocked write) from 2 s to 12 s: no store
    # outage, no start-up, only ticks that come late. The oldest instant fires at 12; those
    # dropped behind it were due before it started, when nothing ran: misfire, not overlap.
    core = _ran_at_one()
    d = core.tick(at(12.4))
    [late] = of(d, Fire)
    assert late.planned == at(2)
    skips = of(d, Skip)
    assert [(s.planned, s.reason) for s in skips] == [
        (at(s), SkipReason.MISFIRE) for s in range(3, 13)]
    assert skips[0].detail is not None and "held up" in skips[0].detail
    assert "was still running" in skips[0].detail
    # on time again: what runs started before the next instant was due, a plain overlap
    d = core.tick(at(13))
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [(at(13), SkipReason.OVERLAP)]


def test_an_attempt_admitted_on_time_but_started_late_does_not_overlap_what_it_held_up(
        ) -> None:
    # The fire of 2 was admitted on time; its row write waited for the database until 12
    # (the scheduler thread blocked in it). The runtime tells the core when it really
    # started; the instants due before that, handled after it, are misfire, not overlap.
    core = _ran_at_one()
    [held] = of(core.tick(at(2)), Fire)
    core.started_late(held.key, at(12.1))
    skips = of(core.tick(at(12.2)), Skip)
    assert [(s.planned, s.reason) for s in skips] == [
        (at(s), SkipReason.MISFIRE) for s in range(3, 13)]
    assert skips[0].detail is not None and "held up" in skips[0].detail


def test_an_instant_due_while_its_predecessor_ran_on_time_stays_overlap() -> None:
    # the previous execution started on time and was still running: overlap, even when
    # the scheduler handles the next instant a little late
    core = SchedulerCore([job(every=1)])
    core.start(at(0.5))
    [first] = of(core.tick(at(1.01)), Fire)
    d = core.tick(at(2.3))
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [(at(2), SkipReason.OVERLAP)]
    assert of(d, Fire) == []
    core.on_complete(first.key, OK, None, at(2.5))


def test_an_overlap_due_while_the_scheduler_was_held_up_is_a_misfire() -> None:
    # The scheduler was frozen from 1.2 s to 6.5 s while instant 1's command ran; the
    # command may have ended meanwhile (its end is seen only after the tick that handles
    # 2 to 6), so those instants are not blamed on it: misfire, the scheduler held up.
    core = SchedulerCore([job(every=1)])
    core.start(at(0.5))
    [first] = of(core.tick(at(1)), Fire)
    skips = of(core.tick(at(6.5)), Skip)
    assert [(s.planned, s.reason) for s in skips] == [
        (at(s), SkipReason.MISFIRE) for s in range(2, 7)]  # 6 too: due within the stall
    assert skips[0].detail is not None and "held up" in skips[0].detail
    # handled on time again while it still runs: a plain overlap
    assert [(s.planned, s.reason) for s in of(core.tick(at(7.2)), Skip)] == [
        (at(7), SkipReason.OVERLAP)]
    assert of(core.on_complete(first.key, OK, None, at(7.5)), Fire) == []


def test_a_tick_a_little_late_is_no_stall() -> None:
    core = SchedulerCore([job(every=1)])
    core.start(at(0.5))
    of(core.tick(at(1)), Fire)
    skips = of(core.tick(at(3.9)), Skip)  # instant 3 0.9 s late, 2 1.9 s late
    assert [(s.planned, s.reason) for s in skips] == [
        (at(2), SkipReason.MISFIRE), (at(3), SkipReason.MISFIRE)]
    skips = of(core.tick(at(4.95)), Skip)
    assert [(s.planned, s.reason) for s in skips] == [(at(4), SkipReason.OVERLAP)]


def test_the_threshold_is_inclusive_and_measured_on_the_oldest_instant() -> None:
    threshold = timedelta(seconds=10)
    on_edge = SchedulerCore([job(every=1, misfire_threshold=threshold,
                                 misfire_policy=MisfirePolicy.FIRE_NOW)])
    assert of(on_edge.start(at(11), DOWN), Missed) == []  # 1 is exactly 10 s late
    past = SchedulerCore([job(every=1, misfire_threshold=threshold,
                              misfire_policy=MisfirePolicy.FIRE_NOW)])
    d = past.start(at(11) + timedelta(microseconds=1), DOWN)
    assert [f.planned for f in of(d, Fire)] == [at(11)]  # the whole set: newest is 11


def test_twelve_days_of_per_second_instants_stay_one_bounded_action() -> None:
    now = T0 + timedelta(days=12)
    for policy, runs in ((MisfirePolicy.SKIP, 0), (MisfirePolicy.FIRE_ALL, 5),
                         (MisfirePolicy.FIRE_NOW, 1)):
        core = SchedulerCore([job(every=1, misfire_policy=policy, catchup_limit=5)])
        began = time.perf_counter()
        d = core.start(now, DOWN)
        assert time.perf_counter() - began < 5  # counted up to a cap, never listed
        [run] = of(d, Skip)
        assert (run.planned, run.last, run.reason) == (
            at(1), now - timedelta(seconds=runs), MISFIRE), policy
        assert not run.count_exact and run.count >= 100_000 - runs
        assert of(d, Missed)[0].count >= 100_000
        assert [f.planned for f in of(d, Fire)] == [now - timedelta(seconds=runs - 1)][:runs]
        assert len(d.actions) <= 3 + runs  # Missed, the run, a cursor, the fires/enqueues


def test_a_paused_job_reports_its_catch_up_instants_as_one_paused_run() -> None:
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_ALL, catchup_limit=5)])
    d = core.start(at(120.4), {"j": JobState(cursor=T0, paused=True)})
    assert of(d, Fire) == []
    assert of(d, Skip) == [Skip("j", at(1), Origin.MISFIRE, MISFIRE, at(115), 115),
                           Skip("j", at(116), Origin.MISFIRE, SkipReason.PAUSED, at(120), 5)]


def test_a_set_of_one_is_a_single_skip() -> None:
    core = SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.FIRE_NOW)])
    d = core.start(at(170), DOWN)  # 60 is missed, and so is 120 with it
    assert of(d, Skip) == [Skip("j", at(60), Origin.MISFIRE, MISFIRE)]
    assert [f.planned for f in of(d, Fire)] == [at(120)]


def test_jitter_counts_in_the_lateness_of_the_oldest() -> None:
    # late = now - due, due = planned + the occurrence's jitter (as for every fire)
    j = job(every=3600, jitter=timedelta(minutes=50), misfire_policy=MisfirePolicy.SKIP)
    due = at(3600) + jitter_offset(occurrence_id("j", at(3600)), j.jitter)
    assert due - at(3600) > timedelta(seconds=60)  # (this instant's jitter is large)
    core = SchedulerCore([j])
    d = core.start(due + timedelta(seconds=60), DOWN)
    assert of(d, Missed) == [] and d.next_wake == due  # not missed: fires, late
    core = SchedulerCore([j])
    d = core.start(due + timedelta(seconds=61), DOWN)
    assert of(d, Skip) == [Skip("j", at(3600), Origin.MISFIRE, MISFIRE)]


def test_untracked_and_memory_store_skip_silently_also_after_a_stall() -> None:
    for core in (SchedulerCore([job(every=1, tracked=False,
                                    misfire_policy=MisfirePolicy.FIRE_ALL)]),
                 SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_ALL)],
                               durable=False)):
        core.start(T0)
        [f] = of(core.tick(at(1)), Fire)
        core.on_complete(f.key, OK, None, at(1.1))
        d = core.tick(at(200))  # the scheduler thread stalled
        assert of(d, Fire) == [] and of(d, Skip) == []
        assert [(m.policy, m.count) for m in of(d, Missed)] == [(MisfirePolicy.SKIP, 199)]
        assert [f.planned for f in of(core.tick(at(201)), Fire)] == [at(201)]
