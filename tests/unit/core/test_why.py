"""`why`: the outcome of one planned instant from the facts the store holds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from core_helpers import T0, at, job

from cronctl.core.timing import schedule_for
from cronctl.core.why import (
    Outcome,
    explain,
    explain_disabled,
    in_dst_gap,
    planned_at_or_before,
)
from cronctl.jobs.model import ExecutionStatus, Mode

S = ExecutionStatus


@dataclass(frozen=True)
class Row:
    status: ExecutionStatus
    attempt: int
    node_id: str = "n1"
    error: str | None = None


@dataclass(frozen=True)
class Skip:
    reason: str
    node_id: str = "n1"
    detail: str | None = None


def verdict(planned_for: datetime, *, now: datetime = at(3600), executions=(), skips=(),
            cursor: datetime | None = at(3600), paused=False, tracked=True, j=None,
            first_seen: datetime | None = None):
    j = j or job(every=60)
    planned = planned_at_or_before(schedule_for(j), planned_for)
    return explain(j, planned_for, planned, now=now, executions=list(executions),
                   skips=list(skips), cursor=cursor, paused=paused, tracked=tracked,
                   first_seen=first_seen)


def test_before_the_job_existed_nothing_was_planned() -> None:
    """Issue 24: `why hello 2m` for a job a scheduler first had a minute ago said missed."""
    v = verdict(at(120), first_seen=at(3000))
    assert (v.outcome, v.reason) == (Outcome.NOT_PLANNED, "not_yet_scheduled")
    assert v.detail.startswith("the job did not exist yet")
    assert verdict(at(3000), first_seen=at(3000)).outcome is Outcome.MISSED  # from then on
    # a record of it wins (a replay queued by hand, an older database)
    assert verdict(at(120), first_seen=at(3000),
                   executions=[Row(S.SUCCEEDED, 1)]).outcome is Outcome.RAN


def test_nearest_planned_instant_at_or_before() -> None:
    every_minute = schedule_for(job(every=60))
    assert planned_at_or_before(every_minute, at(120)) == at(120)
    assert planned_at_or_before(every_minute, at(150)) == at(120)
    yearly = schedule_for(job(cron="0 0 0 1 1 *"))
    assert planned_at_or_before(yearly, datetime(2026, 6, 1, tzinfo=UTC)) == datetime(
        2026, 1, 1, tzinfo=UTC)
    never_before = schedule_for(job(cron="0 0 0 29 2 *"))
    assert planned_at_or_before(never_before, datetime(2021, 1, 1, tzinfo=UTC)) is not None


def test_nearest_planned_instant_at_the_start_of_time() -> None:
    # Found by fuzzing `cronctl why JOB 0001-01-01T00:00:00`: the look-back windows went
    # before year 1 (OverflowError). There is simply nothing planned before it.
    start = datetime.min.replace(tzinfo=UTC)
    assert planned_at_or_before(schedule_for(job(cron="0 30 1 * * *")), start) is None
    assert planned_at_or_before(schedule_for(job(every=60)), start) is None
    two_past = datetime(2, 1, 1, 0, 2, tzinfo=UTC)
    assert planned_at_or_before(schedule_for(job(every=60)), two_past) == two_past


def test_ran_and_retried() -> None:
    v = verdict(at(120), executions=[Row(S.FAILED, 1, error="exit 1"), Row(S.SUCCEEDED, 2)])
    assert (v.outcome, v.scheduled_at, v.reason) == (Outcome.RAN, at(120), None)
    assert "2 attempts" in v.detail and "attempt 2 succeeded" in v.detail


def test_running_and_pending() -> None:
    assert verdict(at(120), executions=[Row(S.RUNNING, 1)]).outcome is Outcome.RUNNING
    v = verdict(at(120), executions=[Row(S.FAILED, 1), Row(S.PENDING, 2)])
    assert v.outcome is Outcome.PENDING and "attempt 2" in v.detail


def test_each_skip_reason_and_missed_by_policy() -> None:
    for reason in ("overlap", "paused", "unresolved_target", "superseded", "expired"):
        v = verdict(at(120), skips=[Skip(reason)])
        assert (v.outcome, v.reason) == (Outcome.SKIPPED, reason), reason
        assert "skipped" in v.detail
    v = verdict(at(120), skips=[Skip("misfire")])
    assert (v.outcome, v.reason) == (Outcome.MISSED, "misfire")
    assert "misfire_policy = skip" in v.detail


def test_an_instant_between_fires_answers_for_the_one_before() -> None:
    v = verdict(at(150), executions=[Row(S.SUCCEEDED, 1)])
    assert v.scheduled_at == at(120) and v.outcome is Outcome.RAN
    assert "not a planned instant" in v.detail


def test_future_unhandled_untracked_paused() -> None:
    assert verdict(at(7200), now=at(3600)).outcome is Outcome.FUTURE
    v = verdict(at(120), cursor=at(60))
    assert v.outcome is Outcome.PENDING and "misfire policy" in v.detail
    assert verdict(at(120), tracked=False).outcome is Outcome.MISSED
    assert verdict(at(120), paused=True).reason == "paused"


def test_disabled_and_no_match() -> None:
    assert explain_disabled(job(enabled=False)).outcome is Outcome.NOT_PLANNED
    j = job(cron="0 0 0 1 1 *")
    v = explain(j, T0, None, now=T0, executions=[], skips=[], cursor=None, paused=False,
                tracked=True)
    assert (v.outcome, v.reason) == (Outcome.NOT_PLANNED, "no_match")


def test_dst_gap_detection() -> None:
    ny = ZoneInfo("America/New_York")
    assert in_dst_gap(datetime(2026, 3, 8, 2, 30), ny)
    assert not in_dst_gap(datetime(2026, 3, 8, 3, 30), ny)
    assert not in_dst_gap(datetime(2026, 11, 1, 1, 30), ny)  # a fold exists (twice)


def test_single_instance_overlap_names_the_cluster() -> None:
    j = job(every=60, mode=Mode.SINGLE_INSTANCE)
    v = verdict(at(120), skips=[Skip("overlap", node_id="n2")], j=j)
    assert "cluster" in v.detail and "n2" in v.detail


def test_a_late_sets_misfire_says_what_happened_not_the_policy() -> None:
    detail = ("due while no scheduler could start it (until 2026-03-01T12:05:00+00:00); "
              "when it fired late, an earlier instant of that set was still running")
    v = verdict(at(120), skips=[Skip("misfire", node_id="n2", detail=detail)])
    assert v.detail == f"skipped (misfire): {detail} (decided by node n2)"
    assert "misfire_policy" not in v.detail
    plain = verdict(at(120), skips=[Skip("misfire")])
    assert "misfire_policy = skip" in plain.detail


def test_a_job_no_scheduler_ever_had_was_not_planned() -> None:
    """Issue 39 item 10: the strip and `why` agree on a fresh install's past instants."""
    j = job(every=60)
    planned = planned_at_or_before(schedule_for(j), at(120))
    v = explain(j, at(120), planned, now=at(3600), executions=[], skips=[], cursor=None,
                paused=False, tracked=True, scheduled=False)
    assert (v.outcome, v.reason) == (Outcome.NOT_PLANNED, "not_yet_scheduled")
    assert "no scheduler has had" in v.detail
    v = explain(j, at(7200), planned_at_or_before(schedule_for(j), at(7200)), now=at(3600),
                executions=[], skips=[], cursor=None, paused=False, tracked=True,
                scheduled=False)
    assert v.outcome is Outcome.FUTURE  # still to come: planned once a scheduler runs
