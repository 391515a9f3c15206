"""``next``, ``jobs/{id}/next``: the next fire times of a job or an expression, local and
UTC, with DST notes. Imports only the pure cron engine: ``cronctl next EXPR`` stays fast."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cronctl.cron import (
    CronSyntaxError,
    MissingHashIdError,
    Schedule,
    UnknownTimezoneError,
    load_zone,
)
from cronctl.errors import NotFoundError, UsageError
from cronctl.views.common import iso_z

if TYPE_CHECKING:
    from cronctl.jobs.model import JobDefinition
    from cronctl.views import shapes

_JOB_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
MAX_COUNT = 1000


@dataclass(frozen=True)
class NextTarget:
    """What ``next`` shows: the job (``None`` for a bare expression) and its schedule."""

    job_id: str | None
    schedule: Schedule
    timezone: str
    written: str | None = None  # a job's expression as written, when it has H
    # A job's calendars (docs/behaviour.md#spread-calendars-and-dependencies): why a fire is
    # excluded (None: it is not).
    excluded: Callable[[datetime], str | None] | None = None
    # A job's jitter: each fire starts up to this much after the planned time shown.
    jitter: timedelta | None = None


# Given a job id, the job's target, or None when there is no such job.
JobLookup = Callable[[str], NextTarget | None]


def _looks_like_job_id(arg: str) -> bool:
    """Job ids are ``[A-Za-z0-9._-]`` without spaces; every expression has a space, a
    ``*`` or starts with ``@``, except a lone number, which is no valid expression."""
    return _JOB_ID.fullmatch(arg) is not None


def resolve_next_target(
    arg: str,
    tz: str | None = None,
    *,
    jobs: JobLookup | None = None,
    hash_id: str | None = None,
) -> NextTarget:
    """The single place that turns ``next``'s argument into (job id or None, schedule, zone).

    An argument shaped like a job id is looked up with ``jobs``; anything else is parsed
    as a cron expression (or ``@every 90s``) in ``tz`` (default UTC), its ``H`` items
    resolved with ``hash_id`` (docs/behaviour.md#spread-calendars-and-dependencies: the preview of
    what job ``hash_id`` would get). User mistakes raise :class:`UsageError` (exit 2) or
    :class:`NotFoundError` (exit 3) with one line.
    """
    text = arg.strip()
    if hash_id is not None and _JOB_ID.fullmatch(hash_id) is None:
        raise UsageError(f"--hash-id: {hash_id!r} is not a job id ([A-Za-z0-9._-], 1-200 "
                         "characters)")
    zone_name = tz if tz is not None else "UTC"
    try:
        zone = load_zone(zone_name)
    except UnknownTimezoneError as exc:
        raise UsageError(f"--tz: {exc}") from None
    if _looks_like_job_id(text):
        found = jobs(text) if jobs is not None else None
        if found is not None and hash_id is not None:
            raise UsageError(f"--hash-id is for an expression; job {text!r} resolves H with "
                             "its own id")
        if found is not None:
            if tz is None:
                return found
            # --tz only changes how times are shown; the job keeps its own zone for firing.
            return NextTarget(found.job_id, found.schedule, zone_name, found.written,
                              found.excluded)
        raise NotFoundError(
            f"no job {text!r}; a cron expression needs 5 or 6 fields, e.g. '0 8 * * MON-FRI'"
        )
    try:
        schedule = Schedule(text, zone, hash_id=hash_id)
    except MissingHashIdError as exc:
        where = f"{exc.field} field" if exc.field else "the expression"
        raise UsageError(f"{where} uses H, a value chosen from a job id: pass --hash-id ID "
                         "to preview it for job ID") from None
    except CronSyntaxError as exc:
        raise UsageError(str(exc)) from None
    return NextTarget(None, schedule, schedule.timezone)


def parse_from(text: str | None, now: datetime, tz: str) -> datetime:
    """``--from T``: ISO 8601 (a time without an offset is in ``tz``; a bare date is its
    midnight there), ``now``, or a duration relative to now: ``2h`` or ``+2h`` is two hours
    from now, ``-2h`` two hours ago."""
    if text is None:
        return now
    from cronctl.argtypes import SIGNED, parse_time

    return parse_time(text, now, what="--from", relative=SIGNED, zone=load_zone(tz),
                      schedule=True)


def job_target(job: JobDefinition) -> NextTarget:
    """What ``next`` shows of a defined job: its schedule, zone, expression as written and,
    when it has calendars, why one of them excludes an instant."""
    from cronctl.jobs import job_schedule

    excluded = None
    if job.calendars:
        from cronctl.core.calendars import exclusion

        def excluded(fire: datetime) -> str | None:
            hit = exclusion(job, fire)
            return None if hit is None else hit.detail
    return NextTarget(job.id, job_schedule(job), job.timezone, job.cron_written, excluded,
                      job.jitter if job.jitter > timedelta(0) else None)


@dataclass(frozen=True)
class FireRow:
    utc: datetime
    local: datetime
    note: str | None
    left_out: str | None = None  # a calendar excludes it: why (it does not run)


# Most excluded instants `next` steps over before it gives up (a calendar that excludes
# every day of a job's schedule must not loop for 4 years of per-second fires).
MAX_LEFT_OUT = 1000


def next_fires(target: NextTarget, start: datetime, count: int) -> list[FireRow]:
    """The next ``count`` fires after ``start`` (fewer when the schedule stops firing),
    with the instants a calendar of the job excludes among them, marked ``left_out``
    (not counted; at most :data:`MAX_LEFT_OUT` of them)."""
    zone = load_zone(target.timezone)
    rows: list[FireRow] = []
    fires = left = 0
    for fire in target.schedule.iter_after(start):
        why = target.excluded(fire) if target.excluded is not None else None
        rows.append(FireRow(fire, fire.astimezone(zone), target.schedule.dst_note(fire), why))
        if why is None:
            fires += 1
        else:
            left += 1
        if fires >= count or left >= MAX_LEFT_OUT:
            break
    return rows


def to_json(target: NextTarget, start: datetime, rows: Sequence[FireRow]) -> shapes.Next:
    schedule = target.schedule
    written, hash_id = written_of(target)
    return {
        "job": target.job_id,
        "expression": written,
        "resolved": schedule.text,
        "hash_id": hash_id,
        "timezone": target.timezone,
        "description": schedule.explain(),
        "dst_gap": schedule.dst_gap.value if schedule.expression is not None else None,
        "dst_fold": schedule.dst_fold.value if schedule.expression is not None else None,
        "from": iso_z(start),
        # the fires below are planned times; each starts up to this many seconds later
        "jitter_seconds": None if target.jitter is None else target.jitter.total_seconds(),
        "fires": [
            {"local": row.local.isoformat(), "utc": iso_z(row.utc), "note": row.note}
            for row in rows if row.left_out is None
        ],
        # planned instants a calendar of the job excludes: they do not run
        "excluded": [
            {"local": row.local.isoformat(), "utc": iso_z(row.utc), "note": row.left_out}
            for row in rows if row.left_out is not None
        ],
    }


def written_of(target: NextTarget) -> tuple[str, str | None]:
    """The expression as written (``H`` kept) and the id its ``H`` was resolved with;
    ``(text, None)`` when it has no ``H``."""
    if target.written is not None:
        return target.written, target.job_id
    expr = target.schedule.expression
    if expr is None or expr.hash_id is None:
        return target.schedule.text, None
    return expr.written, expr.hash_id
