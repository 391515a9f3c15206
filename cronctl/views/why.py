"""``why JOB AT`` and ``GET /api/v1/why/{job}?at=``: what became of the occurrence planned
at (or nearest before) ``AT``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from cronctl import argtypes
from cronctl.views.common import execution_json, iso_z

if TYPE_CHECKING:
    from cronctl.core.why import Verdict
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import Reads

_TICK = timedelta(microseconds=1)


def _instant(job: JobDefinition, text: str, now: datetime) -> tuple[datetime, datetime | None]:
    """``AT`` as an instant, and the naive local wall time it was written as (if it was:
    a time without an offset is the job's local time, which is how people ask)."""
    from cronctl.cron import load_zone

    value = text.strip()
    zone = load_zone(job.timezone) if job.every is None else UTC
    # A time in a DST gap is a fair question ("not planned: DST gap skipped").
    at = argtypes.parse_time(value, now, what="AT", zone=zone, gap_ok=True)  # one-line errors
    if argtypes.is_relative(value) or job.every is not None:
        return at, None
    try:
        written = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        return at, None  # "now"
    return at, (written if written.tzinfo is None else None)


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


def decide(job: JobDefinition, at_text: str, store: Reads | None, now: datetime
           ) -> tuple[Verdict, list[Any]]:
    from cronctl.core import needs_store as is_tracked  # = runtime.firing.is_tracked
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
    cursor = None
    paused = False
    if store is not None and planned is not None:
        executions = store.executions_of_occurrence(job.id, occurrence_id(job.id, planned))
        skips = store.skips_covering(job.id, planned)
        state = store.get_schedule(job.id)
        if state is not None:
            cursor, paused = state.cursor, state.paused
    verdict = explain(job, at, planned, now=now, executions=executions, skips=skips,
                      cursor=cursor, paused=paused, tracked=is_tracked(job))
    return verdict, executions


def why_document(job: JobDefinition, verdict: Verdict, executions: list[Any]
                 ) -> dict[str, Any]:
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
