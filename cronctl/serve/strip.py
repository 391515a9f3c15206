"""The dashboard's 24-hour strip: each job's planned instants from 18 hours ago to 6 hours
ahead, in 48 half-hour slots, each coloured by what became of its instants.

A slot is ``failed`` when an attempt planned in it failed, was abandoned, cancelled,
dead-lettered or lost; ``missed`` when the misfire policy dropped an instant of it; ``skipped``
for any other skip record; ``pending`` when an execution of it is pending or running (or
its instant is just due); ``ran`` when executions of it succeeded; ``late`` when its
instant is past by more than the job's ``late_after`` and no scheduler has handled it;
``unknown`` when its instants are past with no record at all (no scheduler ran them, or
the job is untracked); ``unplanned`` when they came before any scheduler had the job (a
new job is planned from then on: ``why`` says ``not_planned (not_yet_scheduled)``, so
this is neutral, not a miss); ``future``; or ``empty`` when the job plans nothing in it.
Each slot links to ``why`` for the instant that gave it its colour.

The page must stay fast on a big database (100 jobs firing every minute plan 144,000
instants a day), so nothing here reads or computes per instant: executions are counted
per slot in SQL (:meth:`Reads.slot_counts`, from an index), only the attempts that did
not succeed and the skip records are read as rows (few), and each slot asks the schedule
for its first instant only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import quote

from markupsafe import Markup, escape

if TYPE_CHECKING:
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import ExecutionRecord, Reads
    from cronctl.store.records import ScheduleState, SkipRecord

SLOT = timedelta(minutes=30)
SLOTS = 48
PAST_SLOTS = 36  # now lies in slot 36: 18 hours back, 6 ahead
GRACE = timedelta(minutes=1)  # a just-due instant is pending, not yet unknown
ROWS = 5000  # at most this many notable attempts and skip records are read per page
ORDER = ("failed", "missed", "skipped", "pending", "ran", "late", "unknown", "unplanned",
         "future", "empty")
FAILED = ("failed", "abandoned", "dead_letter", "cancelled", "lost")
LIVE = ("pending", "running")
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class Slot:
    start: datetime
    state: str  # one of ORDER
    at: datetime | None  # the instant the slot links to (why); None: no link
    counts: tuple[tuple[str, int], ...] = ()  # executions per status, skip reasons
    href: str | None = None  # the link to why for ``at``
    span: str = ""  # "06:00–06:30 UTC" (the same for every job: made once per page)

    @property
    def label(self) -> str:
        span = self.span or f"{self.start:%H:%M}–{self.start + SLOT:%H:%M} UTC"
        if self.counts:
            return f"{span}: " + ", ".join(f"{n} {what}" for what, n in self.counts)
        return f"{span}: " + _QUIET.get(self.state, self.state)


_QUIET = {"empty": "nothing planned", "future": "planned", "unknown": "planned, no record",
          "pending": "due now", "late": "planned, not started yet (late)",
          "unplanned": "not planned: no scheduler had the job yet"}


def window(now: datetime) -> tuple[datetime, datetime]:
    """The strip's first slot's start and its end (24 hours later)."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    current = epoch + ((now - epoch) // SLOT) * SLOT
    first = current - PAST_SLOTS * SLOT
    return first, first + SLOTS * SLOT


def slot_state(counts: dict[str, int], skip_reasons: set[str], planned: datetime | None,
               start: datetime, now: datetime, *, before: bool = False,
               late_at: datetime | None = None) -> str:
    """The colour of one slot: its execution counts per status, the reasons of the skip
    records in it, its first planned instant (``None``: none) and ``now``. ``before``:
    its instants all came before any scheduler had the job. ``late_at``: when its
    instant, not handled by any scheduler yet, became late (``None``: it cannot)."""
    if any(counts.get(s) for s in FAILED):
        return "failed"
    if "misfire" in skip_reasons:
        return "missed"
    if skip_reasons:
        return "skipped"
    if any(counts.get(s) for s in LIVE):
        return "pending"
    if counts.get("succeeded"):
        return "ran"
    if before:
        return "unplanned"
    if planned is None:
        return "empty"
    if start > now or planned > now:
        return "future"
    if late_at is not None and late_at <= now:
        return "late"
    return "pending" if planned > now - GRACE else "unknown"


def strips(jobs: Sequence[JobDefinition], store: Reads | None, now: datetime,
           schedules_read: Sequence[ScheduleState] | None = None) -> dict[str, list[Slot]]:
    """The 48 slots of each of ``jobs`` around ``now``: four reads in all (three when the
    caller read the schedule rows already: ``schedules_read``)."""
    from cronctl.jobs.checks import job_schedule
    from cronctl.jobs.model import ExecutionStatus

    first, end = window(now)
    ids = {job.id for job in jobs}
    counts: dict[tuple[str, int], dict[str, int]] = {}
    notable: list[ExecutionRecord] = []
    skips: list[SkipRecord] = []
    schedules: dict[str, ScheduleState] | None = None  # None: no store, nothing known
    if store is not None and ids:
        rows = store.list_schedules() if schedules_read is None else schedules_read
        schedules = {s.job_id: s for s in rows if s.job_id in ids}
        # Only slots that began by now can hold executions (a manual run is planned "now").
        counts = store.slot_counts(ids, first, SLOT, PAST_SLOTS + 1)
        wanted = [ExecutionStatus(s) for s in (*FAILED, *LIVE)]
        notable = [r for r in store.list_executions(status=wanted, since=first, until=end,
                                                    limit=ROWS) if r.job_id in ids]
        skips = [s for s in store.list_skips(since=first, until=end, limit=ROWS)
                 if s.job_id in ids]
    out: dict[str, list[Slot]] = {}
    by_slot: dict[tuple[str, int], list[ExecutionRecord]] = {}
    for record in notable:
        by_slot.setdefault((record.job_id, (record.scheduled_at - first) // SLOT), []
                           ).append(record)
    spans = [f"{first + k * SLOT:%H:%M}–{first + (k + 1) * SLOT:%H:%M} UTC"
             for k in range(SLOTS)]
    for job in jobs:
        schedule = job_schedule(job)
        quoted = quote(job.id, safe="")
        runs = [s for s in skips if s.job_id == job.id]
        begin, cursor = _planned_since(schedules, job.id, now)
        slots: list[Slot] = []
        for index in range(SLOTS):
            start = first + index * SLOT
            stop = start + SLOT
            planned = original = schedule.next_after(start - _TICK)
            before = False
            if planned is not None and begin is not None and planned < begin:
                planned = schedule.next_after(max(start, begin) - _TICK)
                before = planned is None or planned >= stop
            if planned is not None and planned >= stop:
                planned = None
            here = counts.get((job.id, index), {})
            reasons = {s.reason for s in runs if s.first_at < stop and s.last_at >= start}
            late_at = None
            if (planned is not None and job.late_after is not None and cursor is not None
                    and planned > cursor):
                late_at = planned + job.late_after
            state = slot_state(here, reasons, planned, start, now, before=before,
                               late_at=late_at)
            mine = by_slot.get((job.id, index), ())
            # (an unplanned slot links to its first instant: why says not_yet_scheduled)
            at = _link(state, original if before else planned, start, stop, mine, runs)
            slots.append(Slot(start, state, at, _counted(here, runs, start, stop),
                              href=None if at is None else _why(quoted, at),
                              span=spans[index]))
        out[job.id] = slots
    return out


def _planned_since(schedules: dict[str, ScheduleState] | None, job_id: str, now: datetime
                   ) -> tuple[datetime | None, datetime | None]:
    """Since when the job's instants were planned (``None``: unknown, no store) and its
    cursor. A job no scheduler ever had is planned from the next one's start: nothing
    before ``now`` was (as ``why`` says: ``not_yet_scheduled``)."""
    if schedules is None:
        return None, None
    state = schedules.get(job_id)
    if state is None or (state.first_seen is None and state.cursor is None):
        return now, None
    return state.first_seen, state.cursor


def _why(quoted_job: str, at: datetime) -> str:
    t = at.astimezone(UTC)
    stamp = f"{t:%Y-%m-%dT%H:%M:%S}" + (f".{t.microsecond:06d}" if t.microsecond else "")
    return f"/jobs/{quoted_job}?at={stamp}Z#why"


def strip_html(job_id: str, slots: Sequence[Slot]) -> Markup:
    """The strip as HTML: 48 links (or spans, where there is nothing to explain). Built
    here rather than in a template loop: a page of 100 jobs has 4,800 cells, and Jinja's
    per-cell overhead was a third of the page's time."""
    parts = [f'<div class="strip" role="list" aria-label="Planned instants of '
             f'{escape(job_id)}, 18 hours back to 6 hours ahead">']
    for index, slot in enumerate(slots):
        now = " now" if index == PAST_SLOTS else ""
        label = escape(slot.label)
        if slot.href is None:
            parts.append(f'<span role="listitem" class="cell s-{slot.state}{now}" '
                         f'title="{label}"></span>')
        else:
            parts.append(f'<a role="listitem" class="cell s-{slot.state}{now}" '
                         f'href="{slot.href}" title="{label}"></a>')  # made of safe parts
    parts.append("</div>")
    return Markup("".join(parts))


def _link(state: str, planned: datetime | None, start: datetime, stop: datetime,
          notable: Sequence[ExecutionRecord], runs: Sequence[SkipRecord]) -> datetime | None:
    """The instant that gave the slot its colour: the newest failed (or live) attempt's,
    the newest skipped instant, else the slot's first planned instant."""
    wanted = FAILED if state == "failed" else LIVE if state == "pending" else ()
    found = [r.scheduled_at for r in notable
             if r.status.value in wanted and start <= r.scheduled_at < stop]
    if found:
        return max(found)
    if state in ("missed", "skipped"):
        reason = (lambda r: r == "misfire") if state == "missed" else (lambda r: True)
        ends = [min(s.last_at, stop - _TICK) for s in runs
                if s.first_at < stop and s.last_at >= start and reason(s.reason)]
        if ends:
            return max(ends)
    return planned


def _counted(counts: dict[str, int], runs: Sequence[SkipRecord], start: datetime,
             stop: datetime) -> tuple[tuple[str, int], ...]:
    shown = [(status, n) for status, n in counts.items() if n]
    for run in runs:
        if run.first_at < stop and run.last_at >= start:
            reason = "missed" if run.reason == "misfire" else f"skipped ({run.reason})"
            shown.append((reason, run.count if run.first_at >= start and run.last_at < stop
                          else 1))
    merged: dict[str, int] = {}
    for what, n in shown:
        merged[what] = merged.get(what, 0) + n
    return tuple(sorted(merged.items(), key=lambda kv: (-kv[1], kv[0])))
