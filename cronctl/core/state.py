"""The core's mutable bookkeeping records (private to :mod:`cronctl.core.engine`)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime

from cronctl.core.actions import ExecKey
from cronctl.core.timing import ScheduleLike
from cronctl.jobs.model import JobDefinition, Origin


@dataclass(slots=True, eq=False)
class Job:
    """Mutable per-job bookkeeping; one per job id, kept across reloads."""

    job: JobDefinition
    schedule: ScheduleLike | None  # None: disabled, or never fires
    gen: int = 0  # bumped on reload so stale heap entries are ignored
    handled: datetime | None = None  # newest planned instant taken from the schedule
    paused: bool = False
    removed: bool = False
    in_flight: int = 0  # occurrences admitted and not yet final
    queued: Pending | None = None  # queue_one: the newest fire skipped while busy
    # Explicit fires, FIFO; made on the first one (an empty deque is ~600 bytes, and a
    # job set of 100,000 jobs has almost none waiting).
    waiting: deque[Pending] | None = None
    # Oldest scheduled instant not started because the store was unreachable: from it on,
    # the instants are one misfire set when the store is back (none is decided before).
    lost: datetime | None = None
    # A late set that fires now (its oldest within misfire_threshold): its bounds (the
    # cursor before it, the moment it formed), and the planned instant of the newest
    # scheduled occurrence admitted. An instant of the set dropped behind another instant
    # of the same set was not overlapped in its time: it was missed (see
    # :meth:`Guards._overlap_reason`).
    late: tuple[datetime, datetime] | None = None
    admitted: datetime | None = None
    # When that occurrence's first scheduled attempt started (None for other attempts): an
    # instant due before it was handled late, behind it, and nothing ran at its time.
    admitted_at: datetime | None = None


@dataclass(slots=True, eq=False)
class Pending:
    """An attempt not started yet."""

    js: Job
    planned: datetime
    due: datetime
    attempt: int
    origin: Origin
    occurrence_id: str | None = None  # computed when the attempt starts (skips need none)
    recovered_from: int | None = None
    group: str | None = None  # the serial group reserved at admission (survives reloads)
    row: int | None = None  # a pending execution row written for this attempt (recovered)
    # When it first waited for a slot, a queue_one turn or its serial group (also a group
    # held on another node), on the monotonic clock: waiting longer than
    # misfire_threshold makes it ``expired``.
    waiting_since: float | None = None


@dataclass(slots=True, eq=False)
class Active:
    key: ExecKey
    p: Pending
    started: datetime
