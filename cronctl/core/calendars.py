"""Calendars in the core (docs/behaviour.md#spread-calendars-and-dependencies): a planned instant
whose LOCAL date (in the job's zone) a calendar of the job excludes is not run; it is a skip record,
reason ``calendar``, whose detail names the calendar, the date and the rule.

Only a planned instant's own first attempt is judged (a cron fire, or a misfire
catch-up of an instant): retries and recovered attempts belong to an instant that was
already let through, and a manual trigger or a replay is an operator's explicit ask."""

from __future__ import annotations

from datetime import datetime

from cronctl.core.timing import ScheduleLike
from cronctl.cron import load_zone
from cronctl.jobs.calendar import Exclusion, excluded
from cronctl.jobs.model import JobDefinition


def exclusion(job: JobDefinition, planned: datetime) -> Exclusion | None:
    """Which calendar of ``job`` excludes ``planned`` (and by which rule), or None."""
    if not job.calendars:
        return None
    return excluded(job.calendars, planned, load_zone(job.timezone))


def next_run(job: JobDefinition, schedule: ScheduleLike, after: datetime,
             *, search: int = 1000) -> datetime | None:
    """The job's first planned instant after ``after`` that its calendars let run (None
    when none is found among the next ``search`` planned instants)."""
    fire = schedule.next_after(after)
    if not job.calendars:
        return fire
    for _ in range(search):
        if fire is None or exclusion(job, fire) is None:
            return fire
        fire = schedule.next_after(fire)
    return None


__all__ = ["exclusion", "next_run"]
