"""How many fires land in each second of a window, across many schedules (``cronctl
spread``): the total, and the busiest seconds.

Exact, not sampled: every fire each schedule's own search (:meth:`Schedule.fire_seconds`,
the instants :meth:`Schedule.between` lists) finds in the window is counted, DST included.
Equal schedules are searched once and counted with their multiplicity: a thousand jobs on
``H * * * * *`` are at most 60 distinct schedules, so a day of them is 86,400 searched
fires, not 1.44 million.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronctl.cron.schedule import Schedule

MAX_WINDOW = timedelta(days=31)  # one counter per second: 31 days is ~10 MB of them
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class BusySecond:
    """One second (``at``, aware UTC, whole) and how many fires it holds."""

    at: datetime
    fires: int


@dataclass(frozen=True, slots=True)
class FireCounts:
    """Fires in ``(after, until]`` of ``schedules`` schedules (one per job, equal ones
    included); ``busiest`` holds the seconds with the most fires, most first, the earlier
    first among equals (at most the ``top`` asked for, only seconds with a fire)."""

    after: datetime
    until: datetime
    schedules: int
    fires: int
    busiest: tuple[BusySecond, ...]

    @property
    def peak(self) -> BusySecond | None:
        """The busiest second (the earliest of equals), or ``None`` without a fire."""
        return self.busiest[0] if self.busiest else None


def count_fires(schedules: Iterable[Schedule], after: datetime, until: datetime,
                top: int = 10) -> FireCounts:
    """Count the fires of ``schedules`` in ``(after, until]`` per UTC second.

    ``after`` and ``until`` are aware; the window may be at most :data:`MAX_WINDOW` long
    (``ValueError`` otherwise). Pure: the caller passes the window.
    """
    if after.tzinfo is None or until.tzinfo is None:
        raise ValueError("count_fires needs timezone-aware datetimes")
    if until < after:
        raise ValueError("count_fires: the window ends before it starts")
    if until - after > MAX_WINDOW:
        raise ValueError(f"count_fires: the window is longer than {MAX_WINDOW.days} days")
    grouped = Counter(schedules)
    base = (after - _EPOCH) // _SECOND  # fires are in (base, last]: slot 0 stays empty
    last = (until - _EPOCH) // _SECOND
    counts = array("Q", bytes(8 * (last - base + 1)))
    total = 0
    for schedule, times in grouped.items():
        for second in schedule.fire_seconds(after, until):
            counts[second - base] += times
            total += times
    return FireCounts(after=after, until=until, schedules=sum(grouped.values()),
                      fires=total, busiest=_busiest(counts, base, top))


def _busiest(counts: array[int], base: int, top: int) -> tuple[BusySecond, ...]:
    """The ``top`` largest non-zero slots, most fires first, then earliest.

    Finds the smallest count that still makes the cut from a histogram of the counts
    (C-speed ``Counter`` over the array), then picks the slots at or above it in one pass,
    instead of sorting a month of seconds."""
    if top <= 0:
        return ()
    histogram = Counter(counts)
    histogram.pop(0, None)
    threshold = 0
    taken = 0
    for value in sorted(histogram, reverse=True):
        threshold = value
        taken += histogram[value]
        if taken >= top:
            break
    if threshold == 0:
        return ()
    chosen = [(value, index) for index, value in enumerate(counts) if value >= threshold]
    chosen.sort(key=lambda pair: (-pair[0], pair[1]))
    return tuple(BusySecond(_EPOCH + (base + index) * _SECOND, value)
                 for value, index in chosen[:top])
