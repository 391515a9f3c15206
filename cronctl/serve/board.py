"""The landing page's data: what needs attention first (failed and retrying jobs, late and
missed instants, no live scheduler, failing notifications), then one line per job with
its state, its last run, how long that took and its success rate over the strip's window.

It costs a fixed number of reads whatever the number of jobs (the page must stay fast on
a big database): the strip's (:func:`cronctl.serve.strip.strips`), one read of the
schedule rows, the live nodes, the newest few executions of every job at once
(:meth:`Reads.recent_executions`, one statement) and the notification failures. Nothing
here reads per job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cronctl.serve.strip import FAILED, PAST_SLOTS, Slot, strips

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import JobDefinition
    from cronctl.jobs.violation import Violation
    from cronctl.store.base import Reads
    from cronctl.store.records import ExecutionRecord, ScheduleState
    from cronctl.views.attention import Attention, Late
    from cronctl.views.jobs import ListRow

# Newest rows read per job: what attention judges by, and a waiting retry's failed
# attempt is right behind it.
RECENT = 5
# The states a job line can be in, most pressing first (the filter offers them in this order).
STATES = ("failed", "retrying", "late", "missed", "running", "ok", "never", "idle", "paused",
          "disabled")
_STATE_WORDS = {"failed": "failed", "retrying": "retrying", "late": "late",
                "missed": "missed", "running": "running", "ok": "succeeded",
                "never": "never ran", "idle": "idle", "paused": "paused",
                "disabled": "disabled"}


def last_line(text: str | None) -> str | None:
    """The last non-empty line of an error: a traceback or a command's stderr ends with
    what went wrong."""
    if not text:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


@dataclass(frozen=True)
class JobLine:
    row: ListRow
    state: str  # one of STATES
    last: ExecutionRecord | None  # the newest attempt that started
    duration: timedelta | None  # of ``last`` (so far, while it runs)
    succeeded: int = 0  # attempts in the strip's window
    finished: int = 0  # attempts in the strip's window that ended (succeeded or failed)
    note: str | None = None  # "attempt 1 failed: exit status 2" (a retry waits)
    error: str | None = None  # the last line of the failing attempt's error

    @property
    def words(self) -> str:
        return _STATE_WORDS[self.state]

    @property
    def rate(self) -> int | None:
        """Percent of the ended attempts that succeeded (None: none ended)."""
        if not self.finished:
            return None
        return round(100 * self.succeeded / self.finished)

    def matches(self, query: str) -> bool:
        """``query`` (lower case) in the job's id or description."""
        return query in self.row.id.lower() or query in (self.row.description or "").lower()


@dataclass(frozen=True)
class Concern:
    kind: str  # failed, dead_letter, retrying, late, missed, no_node, notify
    text: str
    job: str | None = None
    at: datetime | None = None  # the instant (a link to why)
    error: str | None = None  # the last line of the error
    count: int = 1  # how many (failures, missed instants) in the strip's window


@dataclass(frozen=True)
class Board:
    lines: Sequence[JobLine]
    concerns: Sequence[Concern]
    strips: Mapping[str, list[Slot]]
    nodes: int  # live scheduler nodes (-1: no store)
    violations: Sequence[Violation] = ()
    counts: Mapping[str, int] = field(default_factory=dict)  # jobs per state


def build_board(config: Config, jobs: Sequence[JobDefinition], store: Reads | None,
                now: datetime, violations: Sequence[Violation] = ()) -> Board:
    from cronctl.views.attention import attention
    from cronctl.views.jobs import list_rows
    from cronctl.views.status import HEARTBEAT_TTL_FACTOR

    ids = [job.id for job in jobs]
    enabled = [job for job in jobs if job.enabled]
    if store is None:
        rows = list_rows(config, jobs, now, None)
        return Board([_line(row, None, [], [], now) for row in rows], (),
                     strips(enabled, None, now), -1, violations)
    if len(jobs) == 1:  # a job's page: its own row, not every job's definition
        one = store.get_schedule(jobs[0].id)
        schedules = [one] if one is not None else []
    else:
        schedules = store.list_schedules()
    recent = store.recent_executions(ids, RECENT)
    # last status and paused flag from the rows read anyway (no read of their own)
    rows = list_rows(config, jobs, now, _Statuses(recent, schedules))
    slots = strips(enabled, store, now, schedules)
    live = store.live_nodes(now, config.heartbeat_interval * HEARTBEAT_TTL_FACTOR)
    seen = attention(store, jobs, schedules, now, live=[n.node_id for n in live],
                     recent=recent)
    late = {x.job: x for x in seen.late}
    lines = [_line(row, late.get(row.id), recent.get(row.id, []), slots.get(row.id, []),
                   now) for row in rows]
    concerns = _concerns(lines, seen, bool(enabled) and not live, slots)
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.state] = counts.get(line.state, 0) + 1
    return Board(lines, concerns, slots, len(live), violations, counts)


class _Statuses:
    """What :func:`cronctl.views.jobs.list_rows` asks of the store, from the newest
    executions and the schedule rows."""

    def __init__(self, recent: Mapping[str, Sequence[ExecutionRecord]],
                 schedules: Sequence[ScheduleState]) -> None:
        self._recent = recent
        self._paused = {s.job_id for s in schedules if s.paused}

    def last_status(self, job_id: str) -> str | None:
        newest = self._recent.get(job_id)
        return newest[0].status.value if newest else None

    def is_paused(self, job_id: str) -> bool:
        return job_id in self._paused


def _line(row: ListRow, late: Late | None, recent: Sequence[ExecutionRecord],
          slots: Sequence[Slot], now: datetime) -> JobLine:
    newest = recent[0] if recent else None
    started = next((r for r in recent if r.started_at is not None), None)
    duration = None
    if started is not None and started.started_at is not None:
        end = started.finished_at
        if end is None and started.status.value == "running":
            end = now
        duration = None if end is None else max(end - started.started_at, timedelta(0))
    succeeded = finished = 0
    for slot in slots[:PAST_SLOTS + 1]:
        for what, n in slot.counts:
            if what == "succeeded":
                succeeded += n
                finished += n
            elif what in FAILED:
                finished += n
    note = error = None
    retry = newest is not None and newest.status.value in ("pending", "running") \
        and newest.attempt > 1
    if retry and newest is not None:
        before = [r for r in recent if r.occurrence_id == newest.occurrence_id
                  and r.attempt < newest.attempt and r.status.value in FAILED]
        if before:
            failed = before[0]
            error = last_line(failed.error)
            note = f"attempt {failed.attempt} {failed.status.value.replace('_', ' ')}" + (
                f": {error}" if error else "")
    if not row.enabled:
        state = "disabled"
    elif row.paused:
        state = "paused"
    elif note is not None and newest is not None and newest.status.value == "pending":
        state = "retrying"
    elif newest is not None and newest.status.value == "running":
        state = "running"
    elif row.last_status in ("failed", "dead_letter", "abandoned", "lost"):
        state = "failed"
        error = last_line(newest.error) if newest is not None else None
    elif late is not None:
        state = "late"
    elif _missed_last(slots):
        state = "missed"
    elif row.last_status == "succeeded":
        state = "ok"
    elif row.last_status is None:
        state = "never"
    else:
        state = "idle"  # cancelled, skipped, or a first attempt still pending
    return JobLine(row, state, started, duration, succeeded, finished, note, error)


def _missed_last(slots: Sequence[Slot]) -> bool:
    """Whether the newest past slot that holds anything is a miss."""
    for slot in reversed(slots[:PAST_SLOTS + 1]):
        if slot.state in ("empty", "future", "unplanned"):
            continue
        return slot.state == "missed"
    return False


def _concerns(lines: Sequence[JobLine], seen: Attention, no_node: bool,
              slots: Mapping[str, list[Slot]]) -> list[Concern]:
    out: list[Concern] = []
    if no_node:
        out.append(Concern("no_node", "No live scheduler: nothing fires until one runs "
                           "(cronctl run)."))
    failing = {f.job: f for f in seen.failing}
    for line in lines:
        job = line.row.id
        if line.state == "failed":
            found = failing.get(job)
            status = found.status if found is not None else line.row.last_status or "failed"
            count = line.finished - line.succeeded
            out.append(Concern(status, f"{status.replace('_', ' ')}", job,
                               found.scheduled_at if found is not None else None,
                               line.error if line.error else
                               last_line(found.error) if found is not None else None,
                               max(count, 1)))
        elif line.state == "retrying":
            out.append(Concern("retrying", "retrying", job,
                               line.last.scheduled_at if line.last is not None else None,
                               line.note))
    for late in seen.late:
        from cronctl.durations import format_duration

        out.append(Concern("late", f"not started {format_duration(late.late_after)} after "
                           "its planned instant", late.job, late.planned))
    for line in lines:
        job = line.row.id
        missed = sum(n for slot in slots.get(job, [])[:PAST_SLOTS + 1]
                     for what, n in slot.counts if what == "missed")
        if missed and line.row.enabled and not line.row.paused:
            newest = max((s.at for s in slots[job][:PAST_SLOTS + 1]
                          if s.state == "missed" and s.at is not None), default=None)
            out.append(Concern("missed", f"{missed} instant{'s' if missed > 1 else ''} "
                               "missed in the last 18 hours", job, newest, count=missed))
    for line_text in [x for x in seen.lines() if x.startswith("notifications")]:
        out.append(Concern("notify", line_text))
    return out
