"""Replay: which planned occurrences of a past window never ran, and queueing them as
replay requests for a running scheduler (``cronctl replay``), oldest first.

Never twice: an occurrence that already has an execution row (any status, any attempt,
any origin) or a replay request is "already handled" and is not queued again. The store
keeps at most one replay request per (job, instant) (the invariant of
:class:`~cronctl.store.base.Triggers`), so two operators replaying the same window at
once still queue each occurrence once; looking the handled ones up first only makes a
dry run and the report exact.

No SQL here: the planning takes the store's Protocol (:class:`ReplayStore`), so it works
on any store and is tested without a database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from cronctl.ids import occurrence_id
from cronctl.jobs.model import Origin
from cronctl.store.base import Reads, Triggers

if TYPE_CHECKING:
    from cronctl.cron import Schedule

CHUNK = 1000  # planned instants looked up per round trip
SCAN_LIMIT = 100_000  # planned instants examined at most (a per-second job over days)

EXECUTED = "executed"
REQUESTED = "requested"


class ReplayStore(Reads, Triggers, Protocol):
    """What replay reads (executions, requests) and writes (requests)."""


@dataclass(frozen=True)
class Occurrence:
    scheduled_at: datetime
    occurrence_id: str
    request: int | None = None  # the replay request id once queued
    handled: str | None = None  # EXECUTED / REQUESTED when skipped


@dataclass(frozen=True)
class Plan:
    """What replay found in the window: to queue (at most ``limit``), already handled, and
    how many unhandled ones ``limit`` left out (``scan_truncated``: at least that many)."""

    queue: Sequence[Occurrence]
    handled: Sequence[Occurrence]
    left_out: int
    scan_truncated: bool


Handled = Callable[[Sequence[datetime]], dict[datetime, str]]
"""Given planned instants (oldest first), which are already handled and why."""


def plan(job_id: str, schedule: Schedule, since: datetime, until: datetime, limit: int,
         handled: Handled) -> Plan:
    """The planned instants of ``(since, until]``, oldest first, split into those to queue
    (the first ``limit`` unhandled ones), the handled ones and a count of the rest. At
    most :data:`SCAN_LIMIT` instants are examined."""
    queue: list[Occurrence] = []
    skipped: list[Occurrence] = []
    left_out = 0
    scanned = 0
    cursor = since
    while scanned < SCAN_LIMIT:
        chunk = schedule.between(cursor, until, limit=min(CHUNK, SCAN_LIMIT - scanned))
        if not chunk:
            break
        scanned += len(chunk)
        done = handled(chunk)
        for at in chunk:
            occurrence = Occurrence(at, occurrence_id(job_id, at), handled=done.get(at))
            if occurrence.handled is not None:
                skipped.append(occurrence)
            elif len(queue) < limit:
                queue.append(occurrence)
            else:
                left_out += 1
        cursor = chunk[-1]
    truncated = scanned >= SCAN_LIMIT and bool(schedule.between(cursor, until, limit=1))
    return Plan(queue, skipped, left_out, truncated)


def handled_in(store: ReplayStore | None, job_id: str) -> Handled:
    """Look up the instants of a chunk in ``store`` (``None``: a database that does not
    exist yet, where nothing is handled): one read of executions, one of requests."""

    def lookup(chunk: Sequence[datetime]) -> dict[datetime, str]:
        if store is None:
            return {}
        first, last = chunk[0], chunk[-1]
        executed = {r.occurrence_id for r in store.list_executions(
            job_id=job_id, since=first, until=last, limit=None)}
        requested = {t.scheduled_at for t in store.list_triggers(job_id, since=first,
                                                                 until=last)}
        out: dict[datetime, str] = {}
        for at in chunk:
            if occurrence_id(job_id, at) in executed:
                out[at] = EXECUTED
            elif at in requested:
                out[at] = REQUESTED
        return out

    return lookup


def enqueue(store: Triggers, job_id: str, queue: Sequence[Occurrence], now: datetime
            ) -> tuple[list[Occurrence], list[Occurrence]]:
    """Queue a replay request for each occurrence: ``(queued, raced)``, where ``raced``
    are those whose request appeared meanwhile (another replay), reported as already
    requested."""
    queued: list[Occurrence] = []
    raced: list[Occurrence] = []
    for occurrence in queue:
        rid = store.enqueue_trigger(job_id, Origin.REPLAY,
                                    scheduled_at=occurrence.scheduled_at, now=now)
        if rid is None:
            raced.append(replace(occurrence, handled=REQUESTED))
        else:
            queued.append(replace(occurrence, request=rid))
    return queued, raced


__all__ = ["CHUNK", "EXECUTED", "REQUESTED", "SCAN_LIMIT", "Handled", "Occurrence", "Plan",
           "ReplayStore", "enqueue", "handled_in", "plan"]
