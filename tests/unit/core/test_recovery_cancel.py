"""Recovery honours a cancel request: ``cronctl cancel`` answered "cancel requested", then
the node died before acting on it. The occurrence ends ``cancelled``: no next attempt,
no attempt written ahead runs, and no guard stays held (SPEC section 4)."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import CloseInterrupted, Fire, RecoveredExecution, SchedulerCore
from cronctl.jobs.model import ExecutionStatus, Origin

PENDING, RUNNING = ExecutionStatus.PENDING, ExecutionStatus.RUNNING
CANCELLED = ExecutionStatus.CANCELLED


def test_running_row_with_cancel_requested_is_cancelled_and_not_run_again() -> None:
    core = SchedulerCore([job(every=3600, max_attempts=3)])
    row = RecoveredExecution(7, "j", at(60), 1, Origin.CRON, RUNNING, cancel_requested=True)
    d = core.start(at(65), {}, [row])
    assert of(d, CloseInterrupted) == [CloseInterrupted(7, "j", CANCELLED)]
    assert of(d, Fire) == []
    # nothing waits either: no retry timer, and the instant counts as handled
    assert of(core.tick(at(3599)), Fire) == []
    [f] = of(core.tick(at(3600)), Fire)
    assert (f.planned, f.attempt) == (at(3600), 1)


def test_pending_row_with_cancel_requested_is_cancelled_not_claimed() -> None:
    core = SchedulerCore([job(every=3600, retry_backoff=timedelta(seconds=10),
                              max_attempts=3)])
    row = RecoveredExecution(9, "j", at(60), 2, Origin.CRON, PENDING, created_at=at(61),
                             cancel_requested=True)
    d = core.start(at(500), {}, [row])
    assert of(d, CloseInterrupted) == [CloseInterrupted(9, "j", CANCELLED)]
    assert of(d, Fire) == []
    assert of(core.tick(at(600)), Fire) == []


def test_cancel_of_the_running_attempt_also_stops_the_attempt_written_ahead() -> None:
    core = SchedulerCore([job(every=3600, retry_backoff=timedelta(seconds=10))])
    ran = RecoveredExecution(1, "j", at(60), 1, Origin.CRON, RUNNING, cancel_requested=True)
    ahead = RecoveredExecution(2, "j", at(60), 2, Origin.CRON, PENDING, created_at=at(61))
    d = core.start(at(65), {}, [ran, ahead])
    assert of(d, CloseInterrupted) == [CloseInterrupted(1, "j", CANCELLED),
                                      CloseInterrupted(2, "j", CANCELLED)]
    assert of(core.tick(at(100)), Fire) == []


def test_cancel_requested_on_the_last_attempt_is_cancelled_not_dead_letter() -> None:
    core = SchedulerCore([job(every=3600, max_attempts=1)])
    row = RecoveredExecution(5, "j", at(60), 1, Origin.MANUAL, RUNNING, cancel_requested=True)
    assert of(core.recover([row], at(70)), CloseInterrupted) == [
        CloseInterrupted(5, "j", CANCELLED)]


def test_single_instance_guard_is_free_after_a_cancelled_recovery() -> None:
    core = SchedulerCore([job(every=60, max_attempts=3)])
    core.start(T0)
    row = RecoveredExecution(3, "j", at(0), 1, Origin.CRON, RUNNING, cancel_requested=True)
    core.recover([row], at(30))
    [f] = of(core.tick(at(60)), Fire)
    assert f.planned == at(60)
