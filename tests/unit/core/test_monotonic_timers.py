"""Timeouts, retry backoffs, deferrals and ``expired`` waits run on the driver's
monotonic clock (``mono=``), not on the wall clock (SPEC section 4, "Clocks"): a wall
clock that steps back neither delays them, nor does one that steps forward hasten them.
Planned instants stay on the wall clock."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import at, job, of

from cronctl.core import Abandon, Fire, Retry, SchedulerCore, Skip, SkipReason
from cronctl.jobs.model import ExecutionStatus

FAILED = ExecutionStatus.FAILED
M0 = 1000.0  # the driver's monotonic reading at the first fire


def _started(**kw: object) -> tuple[SchedulerCore, Fire]:
    core = SchedulerCore([job(every=3600, **kw)])  # type: ignore[arg-type]
    core.start(at(0), mono=M0 - 3600)
    [fire] = of(core.tick(at(3600), mono=M0), Fire)
    return core, fire


def test_a_timeout_fires_on_monotonic_time_after_the_wall_clock_stepped_back() -> None:
    core, fire = _started(timeout=timedelta(seconds=5), max_attempts=1)
    # The wall clock stepped back 30 s; 5 s of monotonic time passed: the deadline is due.
    assert core.wake_in(at(3575), M0 + 4) == 1.0
    [abandon] = of(core.tick(at(3575), mono=M0 + 5), Abandon)
    assert abandon.key == fire.key


def test_a_wall_clock_step_forward_does_not_hasten_a_timeout() -> None:
    core, _ = _started(timeout=timedelta(seconds=5), max_attempts=1)
    # An hour later on the wall clock (the planned instant at 7200 is due), but only 1 s
    # of monotonic time: the running attempt is not timed out, so 7200 overlaps it.
    d = core.tick(at(7200), mono=M0 + 1)
    assert of(d, Abandon) == []
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [(at(7200), SkipReason.OVERLAP)]
    assert of(core.tick(at(7204), mono=M0 + 5), Abandon)


def test_a_retry_backoff_runs_on_monotonic_time() -> None:
    core, fire = _started(max_attempts=2, retry_backoff=timedelta(seconds=10))
    d = core.on_complete(fire.key, FAILED, "boom", at(3601), mono=M0 + 1)
    [retry] = of(d, Retry)
    assert retry.due == at(3611)  # the row says when, on the wall clock of the decision
    # The wall clock stepped back 60 s: the retry still starts 10 s later.
    assert of(core.tick(at(3550), mono=M0 + 10.9), Fire) == []
    [again] = of(core.tick(at(3551), mono=M0 + 11), Fire)
    assert (again.attempt, again.planned) == (2, at(3600))
    # ... and reading it back as a wall time uses the event's own clocks.
    assert core.next_wake() == at(7200)


def test_a_deferred_attempt_is_retried_after_the_interval_whatever_the_wall_clock() -> None:
    core, fire = _started()
    core.defer(fire.key, at(3600), at(3600.5), mono=M0)
    [again] = of(core.tick(at(3480), mono=M0 + 0.5), Fire)  # wall clock 2 min back
    assert again.planned == at(3600)


def test_waiting_for_a_slot_expires_on_monotonic_time() -> None:
    core = SchedulerCore([job("long", every=3600), job("w", every=3600)],
                         max_concurrent_jobs=1)
    core.start(at(0), mono=0.0)
    [first] = of(core.tick(at(3600), mono=3600.0), Fire)
    # The wall clock jumped 2 minutes ahead, but w waited 1 s: it starts, not expired.
    d = core.on_complete(first.key, ExecutionStatus.SUCCEEDED, None, at(3721), mono=3601.0)
    assert of(d, Skip) == []
    assert [f.job_id for f in of(d, Fire)] == ["w"]


def test_waiting_past_the_threshold_in_monotonic_time_expires_despite_a_step_back() -> None:
    core = SchedulerCore([job("long", every=3600), job("w", every=3600)],
                         max_concurrent_jobs=1)
    core.start(at(0), mono=0.0)
    [first] = of(core.tick(at(3600), mono=3600.0), Fire)
    d = core.on_complete(first.key, ExecutionStatus.SUCCEEDED, None, at(3601), mono=3661.0)
    assert [(s.job_id, s.reason) for s in of(d, Skip)] == [("w", SkipReason.EXPIRED)]


def test_without_mono_the_core_counts_timers_from_now() -> None:
    core = SchedulerCore([job(every=3600, timeout=timedelta(seconds=5), max_attempts=1)])
    core.start(at(0))
    of(core.tick(at(3600)), Fire)
    assert core.next_wake() == at(3605)
    assert core.wake_in(at(3600), at(3600).timestamp()) == 5.0
    assert of(core.tick(at(3605)), Abandon)
