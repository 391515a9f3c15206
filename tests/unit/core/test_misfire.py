"""Misfires, recovery before misfire, and the clock rules (SPEC section 4)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_helpers import T0, at, job, of

from cronctl.core import (
    AdvanceCursor,
    ClockSkewError,
    CloseInterrupted,
    Enqueue,
    Fire,
    JobState,
    Missed,
    RecoveredExecution,
    SchedulerCore,
    Skip,
    SkipReason,
)
from cronctl.jobs.model import ExecutionStatus, MisfirePolicy, Origin

MISFIRE = SkipReason.MISFIRE

OK = ExecutionStatus.SUCCEEDED


def _drain(core: SchedulerCore, fires: list[Fire], now_s: float) -> list[Fire]:
    """Complete fires one by one (the job runs serially); return every fire started."""
    seen = list(fires)
    pending = list(fires)
    while pending:
        f = pending.pop(0)
        new = of(core.on_complete(f.key, OK, None, at(now_s)), Fire)
        seen += new
        pending += new
    return seen


def test_startup_skip_advances_cursor_without_firing() -> None:
    core = SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.SKIP)])
    d = core.start(at(3600), {"j": JobState(cursor=at(0))})
    [missed] = of(d, Missed)
    # 60..3600 are ONE set; its oldest is late by more than misfire_threshold, so all of
    # it is missed, 3600 included (SPEC section 4 "Misfires")
    assert (missed.count, missed.dropped, missed.newest) == (60, 60, at(3600))
    assert of(d, Skip) == [Skip("j", at(60), Origin.MISFIRE, MISFIRE, at(3600), 60)]
    assert of(d, AdvanceCursor) == [AdvanceCursor("j", at(3600))]
    assert of(d, Fire) == []
    assert core.tick(at(3600)).actions == ()
    assert [f.planned for f in of(core.tick(at(3660)), Fire)] == [at(3660)]


def test_startup_fire_now_runs_newest_missed_once() -> None:
    core = SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.FIRE_NOW)])
    d = core.start(at(3630), {"j": JobState(cursor=at(0))})
    [fire] = of(d, Fire)
    assert (fire.planned, fire.origin) == (at(3600), Origin.MISFIRE)  # the newest of all
    assert of(d, Missed)[0].dropped == 59
    assert of(d, Skip) == [Skip("j", at(60), Origin.MISFIRE, MISFIRE, at(3540), 59)]


def test_startup_fire_all_keeps_newest_catchup_limit_oldest_first() -> None:
    core = SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.FIRE_ALL, catchup_limit=5)])
    d = core.start(at(3630), {"j": JobState(cursor=at(0))})
    [missed] = of(d, Missed)
    assert (missed.count, missed.dropped) == (60, 55)
    assert of(d, Skip) == [Skip("j", at(60), Origin.MISFIRE, MISFIRE, at(3300), 55)]
    first = of(d, Fire)
    assert len(first) == 1 and len(of(d, Enqueue)) == 4  # run in sequence, not overlapping
    fires = _drain(core, first, 3631)
    assert [f.planned for f in fires] == [at(60 * k) for k in range(56, 61)]
    assert all(f.origin is Origin.MISFIRE for f in fires)


def test_fire_all_counts_huge_gap_without_listing_it() -> None:
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_ALL, catchup_limit=3)])
    d = core.start(at(200_000), {"j": JobState(cursor=at(0))})
    [missed] = of(d, Missed)
    assert not missed.count_exact and missed.count >= 100_000
    [run] = of(d, Skip)  # one action, however many instants
    assert (run.planned, run.last, run.reason, run.count_exact) == (
        at(1), at(199_997), MISFIRE, False)
    fires = _drain(core, of(d, Fire), 200_001)
    assert [f.planned for f in fires] == [at(199_998), at(199_999), at(200_000)]


def test_untracked_jobs_and_memory_store_always_skip_misfires() -> None:
    for core, tracked in ((SchedulerCore([job(every=60, tracked=False,
                                              misfire_policy=MisfirePolicy.FIRE_NOW)]), False),
                          (SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.FIRE_NOW)],
                                         durable=False), True)):
        d = core.start(at(3630), {"j": JobState(cursor=at(0))})
        assert of(d, Fire) == [] and of(d, Skip) == [], tracked  # nothing recorded


def test_runtime_stall_applies_misfire_policy() -> None:
    core = SchedulerCore([job(every=10, misfire_policy=MisfirePolicy.FIRE_NOW)])
    core.start(T0)
    [f] = of(core.tick(at(10)), Fire)
    core.on_complete(f.key, OK, None, at(10.1))
    # the scheduler thread was stuck for ~5 minutes: 20..310 are one missed set
    d = core.tick(at(310.5))
    [missed] = of(d, Missed)
    assert (missed.count, missed.newest) == (30, at(310))
    [fire] = of(d, Fire)
    assert (fire.planned, fire.origin) == (at(310), Origin.MISFIRE)
    assert of(d, Skip) == [Skip("j", at(20), Origin.MISFIRE, MISFIRE, at(300), 29)]
    assert d.next_wake == at(320)


def test_recovery_runs_before_misfire_policy() -> None:
    core = SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.FIRE_NOW)])
    rec = RecoveredExecution(execution_id=7, job_id="j", planned=at(120), attempt=1,
                             origin=Origin.CRON, status=ExecutionStatus.RUNNING)
    d = core.start(at(3630), {"j": JobState(cursor=at(60))}, [rec])
    actions = d.actions
    close = of(actions, CloseInterrupted)
    assert close == [CloseInterrupted(7, "j", ExecutionStatus.LOST)]
    assert actions.index(close[0]) < actions.index(of(actions, Missed)[0])
    [first] = of(d, Fire)
    assert (first.planned, first.attempt, first.recovered_from) == (at(120), 2, 7)
    # the misfire fire waits for the recovered occurrence (no overlap), and the missed
    # set starts after the recovered instant
    assert of(d, Missed)[0].count == len(range(180, 3600 + 1, 60))
    [late] = of(core.on_complete(first.key, OK, None, at(3631)), Fire)
    assert (late.planned, late.origin) == (at(3600), Origin.MISFIRE)


def test_recovery_of_exhausted_running_attempt_is_dead_letter_but_pending_reruns() -> None:
    core = SchedulerCore([job(every=60, max_attempts=2)])
    gone = RecoveredExecution(1, "j", at(60), 2, Origin.CRON, ExecutionStatus.RUNNING)
    never = RecoveredExecution(2, "j", at(120), 2, Origin.CRON, ExecutionStatus.PENDING)
    unknown = RecoveredExecution(3, "nope", at(60), 1, Origin.CRON, ExecutionStatus.RUNNING)
    d = core.start(at(130), {}, [gone, never, unknown])
    assert of(d, CloseInterrupted) == [
        CloseInterrupted(1, "j", ExecutionStatus.DEAD_LETTER),
        CloseInterrupted(3, "nope", ExecutionStatus.DEAD_LETTER),
    ]
    # the pending row never ran: that very attempt runs, claiming its row
    assert [(f.planned, f.attempt, f.row) for f in of(d, Fire)] == [(at(120), 2, 2)]


def test_recovery_honours_a_cancel_requested_before_the_node_died() -> None:
    """``cronctl cancel`` answered, then the node was SIGKILLed: the occurrence ends
    cancelled, with no next attempt, and a retry row written ahead for it is closed too;
    the misfire policy starts after it."""
    core = SchedulerCore([job(every=60, max_attempts=3, misfire_policy=MisfirePolicy.FIRE_NOW)])
    running = RecoveredExecution(7, "j", at(120), 1, Origin.CRON, ExecutionStatus.RUNNING,
                                 cancel_requested=True)
    retry = RecoveredExecution(8, "j", at(120), 2, Origin.CRON, ExecutionStatus.PENDING)
    other = RecoveredExecution(9, "j", at(60), 1, Origin.CRON, ExecutionStatus.RUNNING)
    d = core.start(at(130), {"j": JobState(cursor=at(0))}, [running, retry, other])
    assert of(d, CloseInterrupted) == [
        CloseInterrupted(9, "j", ExecutionStatus.LOST),
        CloseInterrupted(7, "j", ExecutionStatus.CANCELLED),
        CloseInterrupted(8, "j", ExecutionStatus.CANCELLED),
    ]
    # only the occurrence nobody cancelled runs again
    assert [(f.planned, f.attempt) for f in of(d, Fire)] == [(at(60), 2)]
    assert not of(d, Missed)  # nothing after the cancelled instant was missed


def test_clock_backwards_never_refires_handled_instant() -> None:
    core = SchedulerCore([job(every=10)])
    core.start(T0)
    [f] = of(core.tick(at(10)), Fire)
    core.on_complete(f.key, OK, None, at(10.5))
    # clock steps back 8 s: nothing re-fires, the next fire is still +20
    assert core.tick(at(3)).actions == ()
    d = core.tick(at(12))
    assert d.actions == () and d.next_wake == at(20)
    assert [x.planned for x in of(core.tick(at(20)), Fire)] == [at(20)]


def test_clock_skew_refused_before_anything_changes() -> None:
    core = SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.FIRE_NOW)],
                         clock_skew_limit=timedelta(minutes=5))
    rec = RecoveredExecution(1, "j", at(0), 1, Origin.CRON, ExecutionStatus.RUNNING)
    with pytest.raises(ClockSkewError, match="clock_skew_limit"):
        core.start(at(1000), {"j": JobState(cursor=at(1000 + 301))}, [rec])
    assert core.next_wake() is None and core.running == 0
    # within the limit it starts and simply waits for the cursor to pass
    d = core.start(at(1000), {"j": JobState(cursor=at(1000 + 299))})
    assert of(d, Fire) == [] and d.next_wake == at(1320)


def test_clock_jumping_back_past_limit_at_runtime_refuses_to_act() -> None:
    core = SchedulerCore([job(every=10)], clock_skew_limit=timedelta(seconds=60))
    core.start(at(1000))
    [f] = of(core.tick(at(1010)), Fire)
    with pytest.raises(ClockSkewError):
        core.tick(at(900))
    core.on_complete(f.key, OK, None, at(1011))
    assert of(core.tick(at(1020)), Fire)  # the clock is back: acting again


def test_clock_stepping_back_and_forth_between_ticks_never_refires_or_rewinds() -> None:
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.FIRE_ALL,
                              misfire_threshold=timedelta(seconds=5))],
                         clock_skew_limit=timedelta(seconds=60))
    core.start(T0)
    fired: list[Fire] = []
    cursors: list[AdvanceCursor] = []

    def step(now_s: float) -> None:
        d = core.tick(at(now_s))
        cursors.extend(of(d, AdvanceCursor))
        todo = of(d, Fire)
        while todo:  # each attempt ends at once; what it lets start runs next
            f = todo.pop(0)
            fired.append(f)
            done = core.on_complete(f.key, OK, None, at(now_s + 0.1))
            cursors.extend(of(done, AdvanceCursor))
            todo.extend(of(done, Fire))

    for s in range(1, 31):
        step(s)
    # NTP steps the clock back 20 s; ticks keep coming (also sub-second ones)
    for s in (10, 10.5, 11, 15, 20, 25, 29.9, 30):
        step(s)
    # then forward past the stall threshold, back a little, and on
    for s in (45, 44, 46, 47):
        step(s)
    planned = [f.planned for f in fired]
    assert len(planned) == len(set(planned)), "an instant fired twice"
    assert planned == sorted(planned)
    assert [c.planned for c in cursors] == sorted(c.planned for c in cursors)
    # 1..30 on time, then the stall catch-up from 31 and on-time fires again
    assert planned[:30] == [at(s) for s in range(1, 31)]
    assert at(47) in planned and all(p <= at(47) for p in planned)
