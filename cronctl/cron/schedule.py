"""``Schedule``: an expression (or interval) in a time zone, with its DST policies.

The search runs on *segments*: stretches of UTC time with one constant offset, bounded by
the zone's offset changes. Inside a segment, local wall time is just UTC + offset, so the
pure wall-clock search of :meth:`CronExpression.next_wall` applies directly. The edges of
a segment are where DST policy acts:

* **gap** (offset grows at ``end``): wall times ``[end + off, end + after)`` do not exist.
  ``shift`` turns all of them that match into ONE fire at ``end``, the first instant after
  the gap; if the expression also names the gap's end wall time, that is the same UTC
  instant, so it fires once. ``skip`` drops them.
* **fold** (offset shrinks at ``end``): wall times ``[end + after, end + off)`` happen at
  the end of this segment (first pass) and again at the start of the next (second pass).
  ``first``/``second``/``both`` say which passes may fire.

Pacific/Apia skipped 2011-12-30 entirely (the offset went from -10 to +14 at midnight).
That is one 24-hour gap, so under ``shift`` every matching time of that day collapses into a
single fire at 2011-12-31 00:00 local, the first instant after the gap: a daily job still
runs once for the lost day, and never twice.

Everything is compared and keyed in UTC epoch seconds (two fold instants of one wall time
compare equal as Python datetimes).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import islice
from typing import NoReturn, TypeVar

from cronctl.cron.expression import CronExpression, parse_cron
from cronctl.cron.interval import Interval
from cronctl.cron.zones import (
    LONGEST_SHIFT,
    MAX_EPOCH,
    MIN_EPOCH,
    Timeline,
    fixed_offset,
    load_zone,
    timeline_for,
    zone_name,
)

# docs/behaviour.md#cron-expressions: no fire within 4 years = never fires
HORIZON = timedelta(days=4 * 365 + 1)
_HORIZON_SECONDS = int(HORIZON.total_seconds())
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_CHUNK = 4096  # interval fires fetched at a time by fire_seconds


class DstGap(enum.StrEnum):
    AUTO = "auto"
    SHIFT = "shift"
    SKIP = "skip"


class DstFold(enum.StrEnum):
    AUTO = "auto"
    FIRST = "first"
    SECOND = "second"
    BOTH = "both"


_E = TypeVar("_E", DstGap, DstFold)


def _choice(kind: type[_E], value: object, key: str) -> _E:
    """Enum values are case-insensitive and accept ``-`` for ``_`` (docs/behaviour.md#jobs)."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        wanted = value.strip().lower().replace("-", "_")
        for member in kind:
            if member.value == wanted:
                return member
    allowed = ", ".join(m.value for m in kind)
    raise ValueError(f"{key}: {value!r} is not one of {allowed}")


def _epoch(t: datetime, what: str) -> int:
    """Whole UTC seconds at or before ``t`` (exact; floats would round near the second)."""
    if not isinstance(t, datetime):
        raise TypeError(f"{what} must be a datetime, got {type(t).__name__}")
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError(
            f"{what} must be a timezone-aware datetime, got naive {t.isoformat()}; "
            "attach a zone, e.g. t.replace(tzinfo=datetime.UTC)"
        )
    return (t - _EPOCH) // _SECOND


def _instant(u: int) -> datetime:
    return datetime.fromtimestamp(u, UTC)  # twice as fast as EPOCH + timedelta


class Schedule:
    """When a job fires: a :class:`CronExpression` in a zone, or an :class:`Interval`.

    ``expr`` may be a string (``"0 30 2 * * *"``, ``"@daily"``, ``"@every 90s"``);
    ``tz`` an IANA name or a ``tzinfo``. Immutable; pure (no clock reads): callers pass
    the instant to search from. ``hash_id`` is the job id a string expression's ``H``
    items are resolved with (docs/behaviour.md#spread-calendars-and-dependencies; ignored when
    ``expr`` is parsed already).
    """

    __slots__ = ("expression", "interval", "zone", "timezone", "dst_gap", "dst_fold",
                 "_shift", "_first", "_second", "_fixed", "_timeline")

    expression: CronExpression | None
    interval: Interval | None
    zone: tzinfo
    timezone: str
    dst_gap: DstGap  # resolved: never AUTO
    dst_fold: DstFold  # resolved: never AUTO
    _shift: bool
    _first: bool
    _second: bool
    _fixed: int | None
    _timeline: Timeline | None

    def __init__(
        self,
        expr: CronExpression | Interval | str,
        tz: str | tzinfo = "UTC",
        dst_gap: DstGap | str = "auto",
        dst_fold: DstFold | str = "auto",
        *,
        hash_id: str | None = None,
    ) -> None:
        if isinstance(expr, str):
            if expr.strip().lower().startswith("@every"):
                expr = Interval.parse(expr)
            else:
                expr = parse_cron(expr, hash_id)
        if not isinstance(expr, CronExpression | Interval):
            raise TypeError(f"Schedule needs an expression, got {type(expr).__name__}")
        zone = load_zone(tz)
        gap = _choice(DstGap, dst_gap, "dst_gap")
        fold = _choice(DstFold, dst_fold, "dst_fold")
        cron = expr if isinstance(expr, CronExpression) else None
        # docs/behaviour.md#time-zones-and-daylight-saving "auto": jobs periodic across hours keep
        # their rhythm (skip gaps, fire both passes of a fold); fixed-time jobs run exactly once a
        # day (shift, first).
        periodic = cron is None or cron.periodic_hours
        if gap is DstGap.AUTO:
            gap = DstGap.SKIP if periodic else DstGap.SHIFT
        if fold is DstFold.AUTO:
            fold = DstFold.BOTH if periodic else DstFold.FIRST
        fixed = fixed_offset(zone)
        put = object.__setattr__
        put(self, "expression", cron)
        put(self, "interval", expr if isinstance(expr, Interval) else None)
        put(self, "zone", zone)
        put(self, "timezone", zone_name(zone))
        put(self, "dst_gap", gap)
        put(self, "dst_fold", fold)
        put(self, "_shift", gap is DstGap.SHIFT)
        put(self, "_first", fold in (DstFold.FIRST, DstFold.BOTH))
        put(self, "_second", fold in (DstFold.SECOND, DstFold.BOTH))
        put(self, "_fixed", fixed)
        put(self, "_timeline", timeline_for(zone) if fixed is None and cron else None)

    # -- value semantics ---------------------------------------------------------------

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Schedule is immutable")

    def __reduce__(self) -> tuple[object, ...]:
        return (Schedule, (self.expression or self.interval, self.zone, self.dst_gap,
                           self.dst_fold))

    def _key(self) -> tuple[object, ...]:
        return (self.expression, self.interval, self.timezone, self.dst_gap, self.dst_fold)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Schedule({self.text!r}, {self.timezone!r}, dst_gap={self.dst_gap.value!r}, "
                f"dst_fold={self.dst_fold.value!r})")

    @property
    def text(self) -> str:
        """The normalized expression, or ``@every 90s``."""
        if self.expression is not None:
            return self.expression.text
        assert self.interval is not None
        return self.interval.text

    def explain(self) -> str:
        if self.expression is not None:
            return self.expression.explain()
        assert self.interval is not None
        return self.interval.explain()

    # -- the search --------------------------------------------------------------------

    def next_after(self, t: datetime) -> datetime | None:
        """The first fire strictly after ``t`` (aware, any zone), as an aware UTC datetime;
        ``None`` when there is none within 4 years."""
        if self.interval is not None:
            _epoch(t, "next_after(t)")
            fire = self.interval.next_after(t)
            return None if fire is None else fire.astimezone(UTC)
        u0 = _epoch(t, "next_after(t)") + 1
        found = self._next_epoch(u0, u0 - 1 + _HORIZON_SECONDS)
        return None if found is None else _instant(found)

    def between(self, a: datetime, b: datetime, limit: int = 100) -> list[datetime]:
        """Fires in ``(a, b]``, oldest first, at most ``limit`` of them (UTC datetimes)."""
        first = _epoch(a, "between(a, ...)")
        last = _epoch(b, "between(..., b)")
        if limit <= 0:
            return []
        if self.interval is not None:
            return [f.astimezone(UTC) for f in self.interval.between(a, b, limit)]
        return [_instant(u) for u in islice(self._cron_epochs(first, last), limit)]

    def fire_seconds(self, a: datetime, b: datetime) -> Iterator[int]:
        """The fires in ``(a, b]``, oldest first, as whole UTC epoch seconds (an interval
        fire off the second is floored to its second): exactly the instants
        :meth:`between` lists, without building a datetime for each (``cronctl spread``
        counts a day of per-second fires)."""
        first = _epoch(a, "fire_seconds(a, ...)")
        last = _epoch(b, "fire_seconds(..., b)")
        if self.interval is None:
            yield from self._cron_epochs(first, last)
            return
        cursor = a
        while True:
            chunk = self.interval.between(cursor, b, limit=_CHUNK)
            for fire in chunk:
                yield (fire - _EPOCH) // _SECOND
            if len(chunk) < _CHUNK:
                return
            cursor = chunk[-1]

    def _cron_epochs(self, first: int, last: int) -> Iterator[int]:
        """Fires in ``(first, last]`` (epoch seconds): the one search both
        :meth:`between` and :meth:`fire_seconds` walk."""
        u = first + 1
        while True:
            found = self._next_epoch(u, last)
            if found is None:
                return
            yield found
            u = found + 1

    def iter_after(self, t: datetime) -> Iterator[datetime]:
        """Fires strictly after ``t``, oldest first, until one is 4 years after the last."""
        current = self.next_after(t)
        while current is not None:
            yield current
            current = self.next_after(current)

    def _next_epoch(self, u0: int, limit: int) -> int | None:
        """The first fire ``f`` with ``u0 <= f <= limit`` in UTC epoch seconds."""
        cron = self.expression
        assert cron is not None
        u0 = max(u0, MIN_EPOCH)
        limit = min(limit, MAX_EPOCH)
        if u0 > limit:
            return None
        fixed = self._fixed
        if fixed is not None:
            # UTC and fixed-offset zones: one segment forever, no DST to resolve.
            wall = cron.next_wall(u0 + fixed, limit + fixed + 1)
            return None if wall is None else wall - fixed
        timeline = self._timeline
        assert timeline is not None
        # Segments are looked up past ``limit``: whether a wall time may fire depends on
        # the offset change that FOLLOWS it (a time in the last hour before a fold is the
        # fold's first pass, which "second" must not fire), and that change can lie after
        # ``limit``. Looking segments up only to ``limit`` made between(a, b) fire a
        # first-pass time whenever b fell inside the first pass (Europe/Helsinki, autumn),
        # where chained next_after, whose limit is 4 years away, correctly did not. The
        # wall search itself stays clipped to ``limit``.
        start, before, off, end, after = timeline.segment(u0, limit + LONGEST_SHIFT)
        # u0 exactly at the first instant after a gap: that is where its shifted fire is.
        if (start == u0 and before < off and self._shift
                and cron.next_wall(start + before, start + off) is not None):
            return u0
        u = u0
        while True:
            low = u + off
            if start is not None and before > off and not self._second:
                low = max(low, start + before)  # skip the second pass of a fold
            if end is None:
                high = limit + off + 1
            elif after < off and not self._first:
                high = min(end + after, limit + off + 1)  # stop before a fold's first pass
            else:
                high = min(end + off, limit + off + 1)
            if low < high:
                wall = cron.next_wall(low, high)
                if wall is not None:
                    return wall - off
            if end is None or end > limit:
                return None
            if after > off and self._shift and cron.next_wall(end + off, end + after) is not None:
                return end
            u = end
            start, before, off, end, after = timeline.segment(u, limit + LONGEST_SHIFT)

    # -- DST notes for people ----------------------------------------------------------

    def dst_note(self, fire: datetime) -> str | None:
        """Why a fire is special, for ``cronctl next``: moved by a gap
        (``"shifted: 02:30 does not exist"``) or in a fold (``"repeated hour, first
        pass"``); ``None`` for an ordinary fire."""
        cron = self.expression
        if cron is None or self._timeline is None:
            return None
        u = _epoch(fire, "dst_note(fire)")
        start, before, off, end, after = self._timeline.segment(u, u + 3 * 86400)
        if start == u and before < off and self._shift:
            wall = cron.next_wall(start + before, start + off)
            if wall is not None:
                lost = _instant(wall).replace(tzinfo=None)
                shown = lost.strftime("%H:%M:%S" if lost.second else "%H:%M")
                if lost.date() != _instant(u + off).date():
                    shown = f"{lost.date().isoformat()} {shown}"
                return f"shifted: {shown} does not exist"
        if start is not None and before > off and u + off < start + before:
            return f"{_repeated(before - off)}, second pass"
        if end is not None and after < off and u + off >= end + after:
            return f"{_repeated(off - after)}, first pass"
        return None


def _repeated(seconds: int) -> str:
    if seconds == 3600:
        return "repeated hour"
    if seconds % 60 == 0:
        return f"repeated {seconds // 60} minutes"
    return f"repeated {seconds} seconds"


_SHARED: dict[tuple[object, ...], Schedule] = {}
_SHARED_LIMIT = 16384


def shared_schedule(expr: CronExpression | Interval, tz: str = "UTC", dst_gap: str = "auto",
                    dst_fold: str = "auto") -> Schedule:
    """``Schedule(expr, tz, dst_gap, dst_fold)``, one instance per distinct definition:
    schedules are immutable, and a job set builds each job's schedule more than once
    (validation, the core, every reload; 10,000 jobs: ~0.2 s of a start-up each time)."""
    key = (expr, tz, dst_gap, dst_fold)
    got = _SHARED.get(key)
    if got is None:
        got = Schedule(expr, tz, dst_gap, dst_fold)
        if len(_SHARED) >= _SHARED_LIMIT:
            _SHARED.clear()
        _SHARED[key] = got
    return got
