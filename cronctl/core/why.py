"""``cronctl why``: what became of one planned instant of a job, from the facts the
store holds (its executions, the skip runs covering it, the job's cursor).

Pure: the caller reads the store and the clock and passes what it found; this module
decides the outcome and says it in one sentence."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Protocol

from cronctl.core.timing import ScheduleLike
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Mode, OverlapPolicy

# How far back `why` looks for the nearest planned instant: widening windows, so a
# per-second job costs a minute's worth of fires and a yearly job a few searches.
_WINDOWS = (timedelta(minutes=1), timedelta(hours=1), timedelta(days=1), timedelta(days=32),
            timedelta(days=367), timedelta(days=4 * 366))


class Outcome(enum.StrEnum):
    RAN = "ran"
    RUNNING = "running"
    PENDING = "pending"
    SKIPPED = "skipped"
    MISSED = "missed"
    FUTURE = "future"
    NOT_PLANNED = "not_planned"


class Attempt(Protocol):
    """What `why` reads of an execution row."""

    @property
    def status(self) -> ExecutionStatus: ...
    @property
    def attempt(self) -> int: ...
    @property
    def node_id(self) -> str: ...
    @property
    def error(self) -> str | None: ...


class SkipFact(Protocol):
    """What `why` reads of a skip run."""

    @property
    def reason(self) -> str: ...
    @property
    def node_id(self) -> str: ...
    @property
    def detail(self) -> str | None: ...


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    scheduled_at: datetime | None
    reason: str | None
    detail: str


def planned_at_or_before(schedule: ScheduleLike, at: datetime) -> datetime | None:
    """The job's planned instant at ``at`` or the nearest one before it (4 years back)."""
    exact = schedule.next_after(_before(at, timedelta(microseconds=1)))
    if exact == at:
        return at
    for window in _WINDOWS:
        fires = schedule.between(_before(at, window), at, limit=1_000_000)
        if fires:
            return fires[-1]
    return None


_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _before(at: datetime, window: timedelta) -> datetime:
    """``at - window``, or the earliest datetime when that is before year 1: `why JOB
    0001-01-01` must look back as far as there is, not overflow (found by fuzzing)."""
    if at - _EARLIEST <= window:
        return _EARLIEST
    return at - window


def in_dst_gap(wall: datetime, zone: tzinfo) -> bool:
    """Whether the naive local time ``wall`` does not exist in ``zone`` (spring forward)."""
    aware = wall.replace(tzinfo=zone)
    back = aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
    return back != wall


def _fmt(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def not_planned(job: JobDefinition, what: str, reason: str) -> Verdict:
    return Verdict(Outcome.NOT_PLANNED, None, reason, what)


def explain_disabled(job: JobDefinition) -> Verdict:
    return not_planned(job, f"job {job.id} is disabled (enabled = false): nothing of it is "
                            "planned", "disabled")


def explain_gap(job: JobDefinition, wall: datetime) -> Verdict:
    return not_planned(
        job, f"{wall:%Y-%m-%d %H:%M:%S} does not exist in {job.timezone} (the clocks "
             f"sprang forward) and dst_gap = skip for this job: that time is not planned",
        "dst_gap")


def explain(
    job: JobDefinition,
    at: datetime,
    planned: datetime | None,
    *,
    now: datetime,
    executions: Sequence[Attempt],
    skips: Sequence[SkipFact],
    cursor: datetime | None,
    paused: bool,
    tracked: bool,
    first_seen: datetime | None = None,
    calendar: str | None = None,
    scheduled: bool = True,
) -> Verdict:
    """The outcome of ``planned`` (the instant :func:`planned_at_or_before` found for
    ``at``, or None if there is none). ``first_seen``: when a scheduler first had the job
    on this database; nothing before it was planned (None: unknown). ``calendar``: which
    calendar of the job excludes ``planned`` and why
    (docs/behaviour.md#spread-calendars-and-dependencies), when one does. ``scheduled``: False when
    no scheduler ever had the job on this database (it has no schedule row): a new job is planned
    from when a scheduler first has it, never before, so its past instants were not planned (the
    dashboard's strip says the same)."""
    if planned is None:
        return not_planned(job, f"job {job.id} has no planned instant at or before "
                                f"{_fmt(at)} (within 4 years)", "no_match")
    lead = "" if planned == at else (
        f"{_fmt(at)} is not a planned instant of {job.id}; the nearest one before it is "
        f"{_fmt(planned)}: ")
    if executions:
        return _from_executions(lead, planned, executions)
    if skips:
        skip = skips[0]
        outcome = Outcome.MISSED if skip.reason == "misfire" else Outcome.SKIPPED
        return Verdict(outcome, planned, skip.reason,
                       lead + _skip_sentence(job, skip))
    if first_seen is not None and planned < first_seen:
        return Verdict(Outcome.NOT_PLANNED, planned, "not_yet_scheduled", lead + (
            f"the job did not exist yet: a scheduler first had {job.id} at "
            f"{_fmt(first_seen)}, and nothing of it was planned before that"))
    if not scheduled and tracked and planned <= now:
        return Verdict(Outcome.NOT_PLANNED, planned, "not_yet_scheduled", lead + (
            f"no scheduler has had {job.id} on this database yet: a new job is planned "
            "from when one first has it, and nothing of it was planned before that"))
    if planned > now:
        if calendar is not None:
            return Verdict(Outcome.FUTURE, planned, "calendar", lead + (
                f"planned for {_fmt(planned)}, still to come; it will not run: {calendar}"))
        return Verdict(Outcome.FUTURE, planned, None,
                       lead + f"planned for {_fmt(planned)}, still to come")
    if calendar is not None and (cursor is None or planned > cursor):
        return Verdict(Outcome.PENDING, planned, "calendar", lead + (
            f"no scheduler has handled this instant yet; it will not run: {calendar}"))
    if paused:
        return Verdict(Outcome.NOT_PLANNED, planned, "paused",
                       lead + f"job {job.id} is paused: its instants do not fire")
    if not tracked:
        return Verdict(Outcome.MISSED, planned, None, lead + (
            f"job {job.id} is not tracked (tracked = false or database = none): its fires "
            "leave no record"))
    if cursor is None or planned > cursor:
        return Verdict(Outcome.PENDING, planned, None, lead + (
            "no scheduler has handled this instant yet; when one runs, the misfire policy "
            f"({job.misfire_policy.value}) decides"))
    return Verdict(Outcome.MISSED, planned, None, lead + (
        "nothing is recorded for it: no scheduler had this job then (it was added, or its "
        "database started, after that instant), or its records are older than the "
        "retention period"))


def _from_executions(lead: str, planned: datetime, executions: Sequence[Attempt]) -> Verdict:
    live = [e for e in executions if e.status is ExecutionStatus.RUNNING]
    waiting = [e for e in executions if e.status is ExecutionStatus.PENDING]
    last = max(executions, key=lambda e: e.attempt)
    if live:
        e = live[-1]
        return Verdict(Outcome.RUNNING, planned, None,
                       lead + f"attempt {e.attempt} is running on node {e.node_id}")
    if waiting:
        e = waiting[-1]
        return Verdict(Outcome.PENDING, planned, None,
                       lead + f"attempt {e.attempt} is waiting to start (a retry, or recovery)")
    tries = len({e.attempt for e in executions})
    words = f"{tries} attempts" if tries > 1 else "1 attempt"
    error = f": {last.error}" if last.error else ""
    return Verdict(Outcome.RAN, planned, None,
                   lead + f"ran ({words}); attempt {last.attempt} {last.status.value}{error}")


_SKIP_WORDS = {
    "overlap": "its previous execution was still running (overlap_policy = skip)",
    "paused": "the job was paused",
    "misfire": "no scheduler ran it in time, and the misfire policy dropped it",
    "unresolved_target": "its target could not be resolved",
    "superseded": "a newer fire replaced it in the queue (overlap_policy = queue_one)",
    "expired": "it waited for a slot or its serial group longer than misfire_threshold",
}


def _skip_sentence(job: JobDefinition, skip: SkipFact) -> str:
    if skip.reason in ("calendar", "upstream") and skip.detail:  # the detail says it all
        return f"skipped: {skip.detail} (decided by node {skip.node_id})"
    if skip.reason == "misfire" and skip.detail:  # a late set's instant, not the policy's
        return f"skipped (misfire): {skip.detail} (decided by node {skip.node_id})"
    words = _SKIP_WORDS.get(skip.reason, skip.reason)
    if skip.reason == "misfire":
        words += f" (misfire_policy = {job.misfire_policy.value})"
    if skip.reason == "overlap" and job.mode is Mode.SINGLE_INSTANCE:
        words = words.replace("(overlap_policy = skip)",
                              "somewhere in the cluster (single_instance)")
    elif skip.reason == "overlap" and job.overlap_policy is not OverlapPolicy.SKIP:
        words = "its previous execution was still running"
    detail = f"; {skip.detail}" if skip.detail else ""
    return f"skipped: {words}{detail} (decided by node {skip.node_id})"


__all__ = ["Outcome", "Verdict", "explain", "explain_disabled", "explain_gap", "in_dst_gap",
           "planned_at_or_before"]
