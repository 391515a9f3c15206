"""``retry_delay``: the one backoff formula (SPEC: "retry_backoff: first retry delay,
doubling each attempt"), and the core's retries and their recovery following it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_helpers import at, job, of

from cronctl.core import Fire, RecoveredExecution, Retry, SchedulerCore, retry_delay
from cronctl.jobs.model import ExecutionStatus, Origin

BACKOFF = timedelta(seconds=10)


def test_the_first_retry_waits_retry_backoff_and_each_next_one_twice_as_long() -> None:
    assert [retry_delay(BACKOFF, attempt) for attempt in range(1, 6)] == [
        timedelta(seconds=s) for s in (10, 20, 40, 80, 160)
    ]
    assert retry_delay(timedelta(milliseconds=250), 3) == timedelta(seconds=1)
    assert retry_delay(timedelta(0), 4) == timedelta(0)


@pytest.mark.parametrize("attempt", [0, -1])
def test_attempts_count_from_one(attempt: int) -> None:
    with pytest.raises(ValueError, match="count from 1"):
        retry_delay(BACKOFF, attempt)


def test_the_cores_retries_double_from_retry_backoff() -> None:
    core = SchedulerCore([job(every=3600, retry_backoff=BACKOFF, max_attempts=4)])
    core.start(at(0))
    [fire] = of(core.tick(at(3600)), Fire)
    dues = []
    now = 3600.0
    for _ in range(3):
        now += 1
        [retry] = of(core.on_complete(fire.key, ExecutionStatus.FAILED, "boom", at(now)), Retry)
        dues.append(retry.due - at(now))
        now = (retry.due - at(0)).total_seconds()
        [fire] = of(core.tick(retry.due), Fire)
        assert fire.attempt == retry.attempt
    assert dues == [retry_delay(BACKOFF, n) for n in (1, 2, 3)]


def test_a_recovered_retry_row_waits_for_the_delay_of_the_attempt_before_it() -> None:
    core = SchedulerCore([job(every=3600, retry_backoff=BACKOFF, max_attempts=4)])
    # attempt 4's row was written when attempt 3 failed, at 100 s: due 40 s later
    row = RecoveredExecution(9, "j", at(60), 4, Origin.CRON, ExecutionStatus.PENDING,
                             created_at=at(100))
    assert core.start(at(110), {}, [row]).next_wake == at(100) + retry_delay(BACKOFF, 3)
