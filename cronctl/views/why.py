"""``why JOB AT`` and ``GET /api/v1/why/{job}?at=``: what became of the occurrence planned
at (or nearest before) ``AT``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from cronctl import argtypes
from cronctl.errors import UsageError
from cronctl.views.common import execution_json, iso_z

if TYPE_CHECKING:
    from cronctl.core.why import Verdict
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import Reads
    from cronctl.views import shapes

_TICK = timedelta(microseconds=1)


def _instant(job: JobDefinition, text: str, now: datetime) -> tuple[datetime, datetime | None]:
    """``AT`` as an instant, and the naive local wall time it was written as (if it was:
    a time without an offset is the job's local time, which is how people ask)."""
    from cronctl.cron import load_zone

    value = text.strip()
    if value.startswith("--"):  # (unknown options reach AT: see cmd_why.register)
        raise UsageError(f"no such option: {value.split('=')[0]}; see 'cronctl why --help'")
    zone = load_zone(job.timezone) if job.every is None else UTC
    value = _on_today(value, now, zone)
    # A time in a DST gap is a fair question ("not planned: DST gap skipped").
    at = argtypes.parse_time(value, now, what="AT", zone=zone, gap_ok=True)  # one-line errors
    if argtypes.is_relative(value) or job.every is not None:
        return at, None
    try:
        written = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return at, None  # "now"
    return at, (written if written.tzinfo is None else None)


_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2})(:\d{2}(?:\.\d+)?)?")


def _on_today(value: str, now: datetime, zone: tzinfo) -> str:
    """A time of day alone (``09:15``, ``09:15:20``) is that time today in the job's zone
    (how one asks about this morning's run); anything else is left as it is."""
    match = _TIME_OF_DAY.fullmatch(value)
    if match is None:
        return value
    hour, minute, seconds = match.groups()
    today = now.astimezone(zone).date().isoformat()
    return f"{today}T{int(hour):02d}:{minute}{seconds or ':00'}"


def _gap_answer(job: JobDefinition, wall: datetime) -> tuple[datetime | None, bool]:
    """For a local ``wall`` time inside a DST gap that the expression names: the instant
    the job fired for it instead (``dst_gap = shift``), or ``(None, True)`` when the job
    skips the gap. ``(None, False)`` when the expression does not name ``wall``."""
    from cronctl.core.timing import schedule_for
    from cronctl.cron import Schedule, load_zone

    assert job.cron is not None
    as_utc = wall.replace(tzinfo=UTC)
    if Schedule(job.cron, "UTC").next_after(as_utc - _TICK) != as_utc:
        return None, False
    zone = load_zone(job.timezone)
    earliest = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    latest = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    low, high = min(earliest, latest), max(earliest, latest)
    fire = schedule_for(job).next_after(low)
    if fire is not None and fire <= high:
        return fire, True
    return None, True


def decide(job: JobDefinition, at_text: str, store: Reads | None, now: datetime,
           parents: Mapping[str, JobDefinition] | None = None) -> tuple[Verdict, list[Any]]:
    """The verdict on the occurrence planned at (or nearest before) ``at_text``, and its
    executions. ``parents``: the jobs by id, for a dependent's parents' ``max_attempts``."""
    from cronctl.core import needs_store as is_tracked  # = runtime.firing.is_tracked
    from cronctl.core.calendars import exclusion
    from cronctl.core.timing import schedule_for
    from cronctl.core.why import explain, explain_disabled, explain_gap, in_dst_gap
    from cronctl.core.why import planned_at_or_before as nearest
    from cronctl.cron import load_zone
    from cronctl.ids import occurrence_id

    at, wall = _instant(job, at_text, now)
    if not job.enabled:
        return explain_disabled(job), []
    planned: datetime | None
    if wall is not None and job.cron is not None and in_dst_gap(wall, load_zone(job.timezone)):
        shifted, named = _gap_answer(job, wall)
        if named and shifted is None:
            return explain_gap(job, wall), []
        planned = shifted if shifted is not None else nearest(schedule_for(job), at)
    else:
        planned = nearest(schedule_for(job), at)
    executions: list[Any] = []
    skips: list[Any] = []
    cursor = first_seen = None
    paused = False
    scheduled = True  # (no store: nothing to tell)
    if store is not None and planned is not None:
        executions = store.executions_of_occurrence(job.id, occurrence_id(job.id, planned))
        skips = store.skips_covering(job.id, planned)
        state = store.get_schedule(job.id)
        # (a row a pause made, before any scheduler had the job, has neither)
        scheduled = state is not None and (state.first_seen is not None
                                           or state.cursor is not None)
        if state is not None:
            cursor, paused, first_seen = state.cursor, state.paused, state.first_seen
    hit = exclusion(job, planned) if planned is not None else None
    verdict = explain(job, at, planned, now=now, executions=executions, skips=skips,
                      cursor=cursor, paused=paused, tracked=is_tracked(job),
                      first_seen=first_seen, calendar=None if hit is None else hit.detail,
                      scheduled=scheduled)
    if (job.after and planned is not None and store is not None and not executions
            and not skips and planned <= now and (cursor is None or planned > cursor)):
        # not decided yet (the dependent's cursor is the instant up to which all are)
        verdict = _upstream(job, planned, store, now, parents or {})
    return verdict, executions


def _upstream(job: JobDefinition, planned: datetime, store: Reads, now: datetime,
              parents: Mapping[str, JobDefinition]) -> Verdict:
    """A dependent's occurrence nothing is recorded of yet: what its parents are at."""
    from cronctl.core.dependencies import (
        ParentFact,
        ParentState,
        occurrence_outcome,
        upstream_verdict,
    )
    from cronctl.core.dependencies import (
        Verdict as Upstream,
    )
    from cronctl.core.why import Outcome
    from cronctl.core.why import Verdict as Why
    from cronctl.ids import occurrence_id

    facts: dict[str, ParentFact] = {}
    for edge in job.after:
        rows = store.executions_of_occurrence(edge.job_id,
                                              occurrence_id(edge.job_id, planned))
        parent_skips = store.skips_covering(edge.job_id, planned) if not rows else []
        parent = parents.get(edge.job_id)
        attempts = parent.max_attempts if parent is not None else 1
        facts[edge.job_id] = (occurrence_outcome(rows, attempts) if rows
                              else ParentFact(ParentState.SKIPPED, parent_skips[0].reason)
                              if parent_skips else ParentFact(ParentState.NONE))
    got = upstream_verdict(job, planned, facts, now)
    if got.verdict is Upstream.WAIT:
        return Why(Outcome.PENDING, planned, "upstream", got.detail)
    if got.verdict is Upstream.FIRE:
        return Why(Outcome.PENDING, planned, None,
                   f"{got.detail}: a scheduler runs it next (origin dependency)")
    return Why(Outcome.PENDING, planned, "upstream",
               f"will be skipped: {got.detail} (when a scheduler decides it)")


def why_document(job: JobDefinition, verdict: Verdict, executions: list[Any]
                 ) -> shapes.Why:
    """``why --json``."""
    from cronctl.ids import occurrence_id

    planned = verdict.scheduled_at
    return {
        "job": job.id,
        "scheduled_at": iso_z(planned),
        "occurrence_id": None if planned is None else occurrence_id(job.id, planned),
        "outcome": verdict.outcome.value,
        "reason": verdict.reason,
        "detail": verdict.detail,
        "executions": [execution_json(e) for e in executions],
        "expression": job.written_text,  # as written (with H, if any)
        "resolved": job.schedule_text,  # what fires: H resolved with the job's id
    }
