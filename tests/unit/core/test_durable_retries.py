"""Retries survive a stop or a crash: the runtime writes the next attempt as a pending
row when the failure is recorded, and recovery runs that very attempt after what is left
of its backoff (SPEC section 4: no occurrence is lost)."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import CloseInterrupted, Fire, RecoveredExecution, Retry, SchedulerCore
from cronctl.jobs.model import ExecutionStatus, Origin

PENDING, RUNNING = ExecutionStatus.PENDING, ExecutionStatus.RUNNING
BACKOFF = timedelta(seconds=10)


def test_retry_action_names_the_occurrence_and_origin_for_its_pending_row() -> None:
    core = SchedulerCore([job(every=60, retry_backoff=BACKOFF)])
    core.start(T0)
    [f] = of(core.tick(at(60)), Fire)
    [r] = of(core.on_complete(f.key, ExecutionStatus.FAILED, "boom", at(61)), Retry)
    assert (r.occurrence_id, r.origin, r.attempt, r.due) == (f.occurrence_id, Origin.CRON, 2,
                                                             at(71))


def test_recovered_pending_retry_waits_for_its_backoff_then_claims_its_row() -> None:
    core = SchedulerCore([job(every=3600, retry_backoff=BACKOFF, max_attempts=3)])
    # attempt 1 failed at 100 s; attempt 3's row (backoff 20 s) was written at 105 s
    row = RecoveredExecution(9, "j", at(60), 3, Origin.CRON, PENDING, created_at=at(105))
    d = core.start(at(110), {}, [row])
    assert of(d, Fire) == [] and of(d, CloseInterrupted) == []
    assert d.next_wake == at(125)
    assert core.tick(at(124)).actions == ()
    [f] = of(core.tick(at(125)), Fire)
    assert (f.planned, f.attempt, f.row, f.recovered_from) == (at(60), 3, 9, None)


def test_recovered_pending_retry_already_due_runs_at_once() -> None:
    core = SchedulerCore([job(every=3600, retry_backoff=BACKOFF)])
    row = RecoveredExecution(4, "j", at(60), 2, Origin.MISFIRE, PENDING, created_at=at(61))
    [f] = of(core.start(at(500), {}, [row]), Fire)
    assert (f.attempt, f.row, f.origin) == (2, 4, Origin.MISFIRE)


def test_running_attempt_with_its_retry_already_written_is_closed_not_rerun() -> None:
    core = SchedulerCore([job(every=3600, retry_backoff=BACKOFF)])
    # killed after writing attempt 2's row but before attempt 1's final status
    ran = RecoveredExecution(1, "j", at(60), 1, Origin.CRON, RUNNING)
    ahead = RecoveredExecution(2, "j", at(60), 2, Origin.CRON, PENDING, created_at=at(61))
    d = core.start(at(65), {}, [ran, ahead])
    assert of(d, CloseInterrupted) == [CloseInterrupted(1, "j", ExecutionStatus.LOST)]
    assert of(d, Fire) == []
    [f] = of(core.tick(at(71)), Fire)
    assert (f.attempt, f.row) == (2, 2)


def test_recovered_pending_retry_keeps_the_misfire_policy_after_its_instant() -> None:
    core = SchedulerCore([job(every=60, retry_backoff=BACKOFF)])
    row = RecoveredExecution(3, "j", at(120), 2, Origin.CRON, PENDING, created_at=at(125))
    core.start(at(130), {}, [row])
    # no fire for 120 again, and the next cron instant is 180
    fires = of(core.tick(at(135)), Fire)
    assert [(f.planned, f.attempt) for f in fires] == [(at(120), 2)]
    core.on_complete(fires[0].key, ExecutionStatus.SUCCEEDED, None, at(136))
    assert [f.planned for f in of(core.tick(at(180)), Fire)] == [at(180)]
