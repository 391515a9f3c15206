"""Timeouts, retries with doubling backoff, dead letters, jitter, reload."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import (
    Abandon,
    DeadLetter,
    Finish,
    Fire,
    Retry,
    SchedulerCore,
    Skip,
    SkipReason,
    jitter_offset,
)
from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, OverlapPolicy

FAILED = ExecutionStatus.FAILED


def test_timeout_abandons_and_releases_slot() -> None:
    core = SchedulerCore([job("a-slow", every=60, timeout=timedelta(seconds=5), max_attempts=1),
                          job("b-other", every=60)], max_concurrent_jobs=1)
    core.start(T0)
    d = core.tick(at(60))
    [slow] = of(d, Fire)
    assert d.next_wake == at(65)  # the deadline is on the heap
    d = core.tick(at(65))
    assert of(d, Abandon)[0].key == slow.key
    assert of(d, DeadLetter)[0].key == slow.key  # last attempt: dead letter
    [other] = of(d, Fire)  # the freed slot went to the waiting job
    assert other.job_id == "b-other"
    # the abandoned handler's late completion changes nothing
    assert core.on_complete(slow.key, ExecutionStatus.SUCCEEDED, None, at(66)).actions == ()


def test_timeout_with_attempts_left_retries() -> None:
    core = SchedulerCore([job(every=60, timeout=timedelta(seconds=5),
                              retry_backoff=timedelta(seconds=10))])
    core.start(T0)
    [f] = of(core.tick(at(60)), Fire)
    d = core.tick(at(65))
    assert [x.status for x in of(d, Finish)] == [ExecutionStatus.ABANDONED]
    assert of(d, Retry)[0].due == at(75)


def test_a_failure_that_is_not_retryable_is_a_dead_letter_at_once() -> None:
    """Issue 24: a command that does not exist was retried three times (30 s of silence
    for `trigger --wait`); another attempt cannot find it either."""
    core = SchedulerCore([job(every=3600, max_attempts=3, retry_backoff=timedelta(seconds=10))])
    core.start(T0)
    [f1] = of(core.tick(at(3600)), Fire)
    d = core.on_complete(f1.key, FAILED, "command not found: nosuch", at(3601),
                         retryable=False)
    assert of(d, Retry) == [] and of(d, Finish) == []
    assert [x.error for x in of(d, DeadLetter)] == ["command not found: nosuch"]
    assert core.tick(at(3700)).actions == ()  # nothing waits for a backoff


def test_retries_double_backoff_then_dead_letter() -> None:
    core = SchedulerCore([job(every=3600, max_attempts=3, retry_backoff=timedelta(seconds=10))])
    core.start(T0)
    [f1] = of(core.tick(at(3600)), Fire)
    d = core.on_complete(f1.key, FAILED, "boom", at(3601))
    [r1] = of(d, Retry)
    assert (r1.attempt, r1.due) == (2, at(3611))
    assert of(d, Finish)[0].status is FAILED
    assert core.tick(at(3610)).actions == ()
    [f2] = of(core.tick(at(3611)), Fire)
    assert (f2.attempt, f2.planned, f2.occurrence_id) == (2, f1.planned, f1.occurrence_id)
    [r2] = of(core.on_complete(f2.key, FAILED, "boom", at(3612)), Retry)
    assert (r2.attempt, r2.due) == (3, at(3632))  # 20 s: doubled
    [f3] = of(core.tick(at(3632)), Fire)
    d = core.on_complete(f3.key, FAILED, "boom", at(3633))
    assert [x.key for x in of(d, DeadLetter)] == [f3.key]
    assert of(d, Retry) == [] and of(d, Finish) == []


def test_retry_keeps_occurrence_in_flight_so_newer_fire_is_skipped() -> None:
    core = SchedulerCore([job(every=1, retry_backoff=timedelta(seconds=10))])
    core.start(T0)
    [f1] = of(core.tick(at(1)), Fire)
    core.on_complete(f1.key, FAILED, "x", at(1.5))
    assert of(core.tick(at(2)), Skip)[0].reason is SkipReason.OVERLAP


def test_cancelled_is_final_without_retry() -> None:
    core = SchedulerCore([job()])
    core.start(T0)
    [f] = of(core.tick(at(1)), Fire)
    d = core.on_complete(f.key, ExecutionStatus.CANCELLED, None, at(1.2))
    assert of(d, Retry) == [] and of(d, Finish)[0].status is ExecutionStatus.CANCELLED


def test_jitter_is_deterministic_and_in_range() -> None:
    jitter = timedelta(seconds=30)
    occ = occurrence_id("j", at(60))
    assert jitter_offset(occ, jitter) == jitter_offset(occ, jitter)
    offsets = {jitter_offset(occurrence_id("j", at(60 * k)), jitter) for k in range(200)}
    assert all(timedelta(0) <= o < jitter for o in offsets) and len(offsets) > 150
    # two independent cores (two nodes) plan the same due time
    due = []
    for _ in range(2):
        core = SchedulerCore([job(every=60, jitter=jitter)])
        due.append(core.start(T0).next_wake)
    assert due[0] == due[1] == at(60) + jitter_offset(occ, jitter)
    [fire] = of(core.tick(due[1]), Fire)  # type: ignore[arg-type]
    assert fire.planned == at(60) and fire.due == due[1]


def test_reload_adds_changes_and_removes() -> None:
    core = SchedulerCore([job("a", every=10), job("b", every=10),
                          job("q", every=1, overlap_policy=OverlapPolicy.QUEUE_ONE)])
    core.start(T0)
    [q] = [f for f in of(core.tick(at(1)), Fire) if f.job_id == "q"]
    core.tick(at(2))  # q's fire at +2 is queued behind the running one
    d = core.reload([job("a", every=20), job("c", every=10)], at(3))
    assert [(s.job_id, s.reason) for s in of(d, Skip)] == [("q", SkipReason.REMOVED)]
    d = core.tick(at(20))
    assert sorted(f.job_id for f in of(d, Fire)) == ["a", "c"]
    # the running attempt of a removed job still completes cleanly
    assert of(core.on_complete(q.key, ExecutionStatus.SUCCEEDED, None, at(21)), Finish)


def test_disabled_job_never_fires() -> None:
    core = SchedulerCore([job(enabled=False)])
    assert core.start(T0).next_wake is None


def test_reload_keeps_an_instant_that_was_due_but_not_ticked_yet() -> None:
    core = SchedulerCore([job("a")])
    core.start(T0)
    [f] = of(core.tick(at(1)), Fire)
    core.on_complete(f.key, ExecutionStatus.SUCCEEDED, None, at(1.1))
    # SIGHUP handled just after 2 s was due, before the tick: only the timeout changes
    core.reload([job("a", timeout=timedelta(seconds=30))], at(2.001))
    [g] = of(core.tick(at(2.002)), Fire)
    assert g.planned == at(2)
    core.on_complete(g.key, ExecutionStatus.SUCCEEDED, None, at(2.1))
    # a new schedule still starts after now
    core.reload([job("a", every=10)], at(2.5))
    assert core.tick(at(9.9)).actions == ()
    assert [x.planned for x in of(core.tick(at(10)), Fire)] == [at(10)]
