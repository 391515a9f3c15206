"""The dashboard's 24-hour strip: a job's planned instants from 18 hours ago to 6 hours
ahead, in 48 half-hour slots, each coloured by what became of its instants.

An instant is ``ran`` (its newest attempt succeeded), ``failed`` (failed, abandoned,
dead_letter, cancelled), ``skipped`` (a skip record), ``missed`` (a skip record of the
misfire policy), ``pending`` (pending or running, or due within the last minute),
``unknown`` (past, with no record: no scheduler ran it, or the job is untracked), or
``future``. A slot shows its most pressing state (failed first) and links to ``why`` for
the instant that gave it; a slot with no planned instant is ``empty``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import ExecutionRecord, Reads
    from cronctl.store.records import SkipRecord

SLOT = timedelta(minutes=30)
SLOTS = 48
PAST_SLOTS = 36  # now lies in slot 36: 18 hours back, 6 ahead
PER_SLOT = 240  # instants looked at per slot (a per-second job has 1,800)
GRACE = timedelta(minutes=1)  # a just-due instant is pending, not yet unknown
ORDER = ("failed", "missed", "skipped", "pending", "unknown", "ran", "future")
_FAILED = {"failed", "abandoned", "dead_letter", "cancelled", "lost"}
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class Slot:
    start: datetime
    state: str  # one of ORDER, or "empty"
    at: datetime | None  # the instant the slot links to (why)
    counts: tuple[tuple[str, int], ...]  # state -> how many, in ORDER
    more: bool = False  # more than PER_SLOT instants: counted up to that

    @property
    def label(self) -> str:
        span = f"{self.start:%H:%M}–{self.start + SLOT:%H:%M} UTC"
        if self.state == "empty":
            return f"{span}: nothing planned"
        counted = ", ".join(f"{n} {state}" for state, n in self.counts)
        return f"{span}: {counted}{' (and more)' if self.more else ''}"


def window(now: datetime) -> tuple[datetime, datetime]:
    """The strip's first slot's start and its end (24 hours later)."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    current = epoch + ((now - epoch) // SLOT) * SLOT
    first = current - PAST_SLOTS * SLOT
    return first, first + SLOTS * SLOT


def instant_state(at: datetime, now: datetime, executions: dict[datetime, ExecutionRecord],
                  skips: Sequence[SkipRecord]) -> str:
    if at > now:
        return "future"
    record = executions.get(at)
    if record is not None:
        status = record.status.value
        if status == "succeeded":
            return "ran"
        return "failed" if status in _FAILED else "pending"
    for run in skips:
        if run.first_at <= at <= run.last_at:
            return "missed" if run.reason == "misfire" else "skipped"
    return "pending" if at > now - GRACE else "unknown"


def strip(job: JobDefinition, store: Reads | None, now: datetime) -> list[Slot]:
    """The 48 slots of ``job`` around ``now``."""
    from cronctl.jobs.checks import job_schedule

    first, end = window(now)
    schedule = job_schedule(job)
    executions: dict[datetime, ExecutionRecord] = {}
    skips: list[SkipRecord] = []
    if store is not None:
        for record in store.list_executions(job_id=job.id, since=first, until=now,
                                            limit=SLOTS * PER_SLOT):
            older = executions.get(record.scheduled_at)
            if older is None or record.attempt > older.attempt:
                executions[record.scheduled_at] = record
        skips = store.list_skips(job_id=job.id, since=first, until=now, limit=2000)
    slots: list[Slot] = []
    for index in range(SLOTS):
        start = first + index * SLOT
        instants = schedule.between(start - _TICK, start + SLOT - _TICK, limit=PER_SLOT)
        if not instants:
            slots.append(Slot(start, "empty", None, ()))
            continue
        states = [(instant_state(at, now, executions, skips), at) for at in instants]
        counts = {state: sum(1 for s, _ in states if s == state) for state, _ in states}
        state = min(counts, key=ORDER.index)
        at = next(a for s, a in states if s == state)
        slots.append(Slot(start, state, at, tuple(sorted(counts.items(),
                                                         key=lambda kv: ORDER.index(kv[0]))),
                          more=len(instants) >= PER_SLOT))
    return slots
