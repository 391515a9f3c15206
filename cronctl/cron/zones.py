"""Time zones as the scheduler needs them: a list of UTC-offset changes.

zoneinfo answers "what is the offset at instant u" but does not list its transitions, and
DST handling needs exactly those: where the wall clock jumps (gap) or repeats (fold).
A :class:`Timeline` finds them by probing the offset and bisecting where it changes, one
~388-day bucket at a time, lazily, and caches them per zone.

Everything is keyed on ``utcoffset()`` changes, never on ``dst()``: Europe/Dublin has a
*negative* DST in tzdata (winter is the "saving"), and Pacific/Apia skipped a whole day
by changing its standard offset; only the offset tells the truth about the wall clock.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronctl.cron.errors import NonexistentTimeError, UnknownTimezoneError

_BUCKET_SHIFT = 25  # 2**25 s ~ 388 days per bucket
_MAX_GAP = 8  # buckets (~8.5 years) between the known range and a new one worth scanning
_PROBE = 6 * 3600  # no two offset changes in tzdata are closer than this and cancel out
# Longer than any gap or fold in tzdata (the longest are whole days: Pacific/Apia 2011,
# Alaska 1867), so a segment sees its start, and a search sees a fold coming.
LONGEST_SHIFT = 3 * 86400
_LOOKBACK = LONGEST_SHIFT
_ONE_SECOND = timedelta(seconds=1)
# fromtimestamp() works between year 1 and 9999; probes stay inside with a margin.
MIN_EPOCH = int((datetime(2, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
MAX_EPOCH = int(
    (datetime(9998, 12, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()
)


_ZONES: dict[str, tzinfo] = {}


def utc_instant(at: datetime) -> datetime:
    """The UTC instant an aware ``at`` names. ``ValueError`` (one line) when it names
    none: a local time inside a DST gap (2026-03-08 02:30 in America/New_York, which the
    clocks skip; Python would silently read it with the offset before the gap), or a time
    whose UTC instant falls outside datetime's years 1-9999 (0001-01-01T00:00+01:00);
    :class:`NonexistentTimeError` (a ``ValueError``) for the gap.
    Either fold of a repeated local time names an instant: ``at.fold`` picks it."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"{at.isoformat()} has no time zone or UTC offset")
    try:
        utc = at.astimezone(UTC)
        back = utc.astimezone(at.tzinfo)
    except (OverflowError, ValueError):
        raise ValueError(f"{at.isoformat()} is out of range: its UTC instant is outside "
                         "the years 1-9999") from None
    if back.replace(tzinfo=None) != at.replace(tzinfo=None, fold=0):
        raise NonexistentTimeError(
            f"{at.replace(tzinfo=None).isoformat(sep=' ')} does not exist in "
            f"{zone_name(at.tzinfo)}: the clocks skip it (a DST gap); use a time outside "
            "the gap or a UTC offset")
    return utc


def load_zone(zone: str | tzinfo) -> tzinfo:
    """A ``tzinfo`` for an IANA name (or pass one through); unknown names raise
    :class:`UnknownTimezoneError` with a one-line message."""
    if isinstance(zone, tzinfo):
        return zone
    found = _ZONES.get(zone)
    if found is not None:
        return found
    if not isinstance(zone, str):
        raise TypeError(f"time zone must be a str or tzinfo, got {type(zone).__name__}")
    name = zone.strip()
    if name.upper() in ("UTC", "Z"):
        name = "UTC"
    try:
        found = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError/OSError: names zoneinfo refuses outright ("", "../etc", a directory).
        raise UnknownTimezoneError(zone) from None
    _ZONES[zone] = found  # ZoneInfo caches too, but only after validating the key again
    return found


def zone_name(zone: tzinfo) -> str:
    """The IANA key of a ZoneInfo, else the tzinfo's own name (``UTC``, ``UTC+05:30``)."""
    key = getattr(zone, "key", None)
    if isinstance(key, str):
        return key
    return zone.tzname(None) or str(zone)


def fixed_offset(zone: tzinfo) -> int | None:
    """The offset in seconds when the zone never changes it, else ``None``.

    Saves building a timeline for UTC, ``datetime.timezone`` objects and the Etc/ zones.
    """
    if isinstance(zone, timezone):
        return int(zone.utcoffset(None).total_seconds())
    key = getattr(zone, "key", None)
    if isinstance(key, str) and (
        key.startswith("Etc/") or key in ("UTC", "GMT", "UCT", "Universal", "Zulu")
    ):
        offset = zone.utcoffset(datetime(2000, 1, 1))
        return int(offset.total_seconds()) if offset is not None else 0
    return None


class Timeline:
    """The offset changes of one zone: ``times[i]`` is the first UTC second with offset
    ``after[i]``; the offset just before it is ``before[i]``.

    Buckets are filled on demand and only ever extended; the published state is one tuple
    replaced atomically, so readers never take the lock.
    """

    def __init__(self, zone: tzinfo) -> None:
        self._zone = zone
        self._lock = threading.Lock()
        # (first bucket, last bucket (inclusive), times, before, after); empty: last < first
        self._state: tuple[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]] = (
            0, -1, (), (), ()
        )

    def offset_at(self, u: int) -> int:
        u = min(max(u, MIN_EPOCH), MAX_EPOCH)
        offset = datetime.fromtimestamp(u, self._zone).utcoffset()
        return int(offset.total_seconds()) if offset is not None else 0

    def _scan(self, bucket: int) -> list[tuple[int, int, int]]:
        """Offset changes with ``start <= T < end`` of one bucket."""
        start = bucket << _BUCKET_SHIFT
        end = (bucket + 1) << _BUCKET_SHIFT
        found: list[tuple[int, int, int]] = []
        prev_u = start - 1
        prev_off = self.offset_at(prev_u)
        probe = start
        while True:
            probe = min(probe, end - 1)
            off = self.offset_at(probe)
            lo, lo_off = prev_u, prev_off
            while lo_off != off:
                # Bisect (lo, probe] for the first second whose offset differs from lo's.
                hi = probe
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if self.offset_at(mid) == lo_off:
                        lo = mid
                    else:
                        hi = mid
                new_off = self.offset_at(hi)
                found.append((hi, lo_off, new_off))
                lo, lo_off = hi, new_off
            prev_u, prev_off = probe, off
            if probe == end - 1:
                return found
            probe += _PROBE

    def _cover(self, first: int, last: int) -> None:
        """Make buckets ``first..last`` known (extending the contiguous known range, or
        starting a new one when they lie far from it: a search in the year 2500 after one
        in 2026 must not scan the five centuries between, ~2 s per century)."""
        with self._lock:
            lo, hi, times, before, after = self._state
            if hi < lo or first > hi + _MAX_GAP or last < lo - _MAX_GAP:
                lo = hi = first
                rows = self._scan(first)
            else:
                rows = list(zip(times, before, after, strict=True))
            while first < lo:
                lo -= 1
                rows = self._scan(lo) + rows
            while last > hi:
                hi += 1
                rows = rows + self._scan(hi)
            self._state = (
                lo, hi,
                tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows),
            )

    def segment(self, u: int, limit: int) -> tuple[int | None, int, int, int | None, int]:
        """The stretch of constant offset around instant ``u``.

        Returns ``(start, offset_before_start, offset, end, offset_after_end)``; ``start``
        is the last change at or before ``u`` (``None`` if none is known nearby) and
        ``end`` the first change after ``u`` (``None`` if none up to ``limit``).
        """
        lo, hi, times, before, after = self._state
        need_lo = (u - _LOOKBACK) >> _BUCKET_SHIFT
        need_hi = u >> _BUCKET_SHIFT
        if need_lo < lo or need_hi > hi or hi < lo:
            self._cover(need_lo, need_hi)
            lo, hi, times, before, after = self._state
        i = bisect_right(times, u)
        while i == len(times) and ((hi + 1) << _BUCKET_SHIFT) <= limit and hi < (
            MAX_EPOCH >> _BUCKET_SHIFT
        ):
            self._cover(lo, hi + 1)
            lo, hi, times, before, after = self._state
            i = bisect_right(times, u)  # another thread may have prepended buckets
        start: int | None = None
        end: int | None = None
        start_before = end_after = off = 0
        if i > 0:
            start, start_before, off = times[i - 1], before[i - 1], after[i - 1]
        if i < len(times) and times[i] <= limit:
            end, end_after = times[i], after[i]
            off = before[i]
        if start is None and end is None:
            off = self.offset_at(u)
        return start, start_before, off, end, end_after


_TIMELINES: dict[tzinfo, Timeline] = {}
_TIMELINES_LOCK = threading.Lock()


def timeline_for(zone: tzinfo) -> Timeline:
    """The shared timeline of a zone (one per zone per process)."""
    found = _TIMELINES.get(zone)
    if found is None:
        with _TIMELINES_LOCK:
            found = _TIMELINES.setdefault(zone, Timeline(zone))
    return found
