"""Pure helpers on a job and its instants: building its schedule, whether its attempts
need the store, deterministic jitter, the retry backoff, and counting missed instants
without walking unbounded ranges."""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from cronctl.ids import utc_iso
from cronctl.jobs.model import JobDefinition, Mode

COUNT_CAP = 100_000  # beyond this many missed instants we stop counting (log says "more than")
_CHUNK = 5_000


class ScheduleLike(Protocol):
    """The part of :class:`cronctl.cron.Schedule` the core uses."""

    def next_after(self, t: datetime) -> datetime | None: ...

    def between(self, a: datetime, b: datetime, limit: int = 100) -> list[datetime]: ...


def needs_store(job: JobDefinition) -> bool:
    """Whether the job's attempts write execution rows (single_instance needs its row:
    the insert is the cluster election), so cannot start while the store is unreachable."""
    return job.tracked or job.mode is Mode.SINGLE_INSTANCE


def schedule_for(job: JobDefinition) -> ScheduleLike:
    """The job's :class:`~cronctl.cron.Schedule` (cron in its zone, or an interval): the
    one the loader checked (:func:`cronctl.jobs.checks.job_schedule`, shared per
    definition), so a job set's schedules are built once."""
    from cronctl.jobs.checks import job_schedule

    return job_schedule(job)


class OccurrenceIds:
    """:func:`cronctl.ids.occurrence_id`, with the instant's text cached: the jobs
    of a burst share their planned instant, and formatting it cost as much as hashing.
    Same value (a unit test compares the two). The key includes ``fold``: datetimes of
    one zone compare equal across a DST fold although they are different instants."""

    MAX_CACHED = 4096

    def __init__(self) -> None:
        self._text: dict[tuple[datetime, int], str] = {}

    def __call__(self, job_id: str, planned: datetime) -> str:
        key = (planned, planned.fold)
        text = self._text.get(key)
        if text is None:
            if len(self._text) >= self.MAX_CACHED:
                self._text.clear()
            text = self._text[key] = utc_iso(planned)
        return hashlib.sha256(f"{job_id}\n{text}".encode()).hexdigest()[:32]


def jitter_offset(occurrence_id: str, jitter: timedelta) -> timedelta:
    """A delay in ``[0, jitter)`` derived from the occurrence id alone, so every node (and
    every restart) computes the same one; whole microseconds."""
    span = int(jitter / timedelta(microseconds=1))
    if span <= 0:
        return timedelta(0)
    # The id is already a digest; re-hashing keeps this independent of its format.
    value = int.from_bytes(hashlib.sha256(occurrence_id.encode()).digest()[:8], "big")
    return timedelta(microseconds=value % span)


def retry_delay(retry_backoff: timedelta, attempt: int) -> timedelta:
    """How long after attempt ``attempt`` (1 = the first) failed the next one starts:
    ``retry_backoff``, doubling each attempt (docs/behaviour.md#jobs ``retry_backoff``), so attempt
    2 runs ``retry_backoff`` after attempt 1, attempt 3 ``2 * retry_backoff`` after attempt 2.

    The one place this is computed: the core's retries, their recovery after a restart,
    ``trigger --here`` and ``trigger``'s wait for the last attempt all use it."""
    if attempt < 1:
        raise ValueError(f"attempt {attempt}: attempts count from 1")
    doubled: int = 2 ** (attempt - 1)  # int ** int is typed Any (a negative power is a float)
    return retry_backoff * doubled


def missed_between(
    schedule: ScheduleLike, after: datetime, until: datetime, keep: int
) -> tuple[int, list[datetime], bool]:
    """Instants in ``(after, until]``: ``(count, newest, exact)`` where ``newest`` holds the
    newest ``keep`` of them, oldest first, and ``exact`` is False when counting stopped at
    :data:`COUNT_CAP` (then ``newest`` still comes from the true end of the range).

    Walks forward in chunks, keeping only a bounded tail: a per-second job missed for a
    day is 86,400 instants and must not become a list of that size."""
    tail: deque[datetime] = deque(maxlen=max(keep, 1))
    count = 0
    cursor = after
    while count < COUNT_CAP:
        chunk = schedule.between(cursor, until, limit=_CHUNK)
        if not chunk:
            return count, list(tail)[-keep:] if keep else [], True
        count += len(chunk)
        tail.extend(chunk)
        cursor = chunk[-1]
        if len(chunk) < _CHUNK:
            return count, list(tail)[-keep:] if keep else [], True
    # Too many to count: find the newest ones by looking back from ``until`` in windows
    # that double until they hold ``keep`` instants.
    return count, _newest(schedule, after, until, keep), False


def _newest(schedule: ScheduleLike, floor: datetime, until: datetime, keep: int) -> list[datetime]:
    if keep <= 0:
        return []
    window = timedelta(minutes=1)
    while True:
        start = max(floor, until - window)
        found: Sequence[datetime] = schedule.between(start, until, limit=10 * keep + _CHUNK)
        if len(found) >= keep or start == floor:
            return list(found[-keep:])
        window *= 2
