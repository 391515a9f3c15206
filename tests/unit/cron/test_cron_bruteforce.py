"""The engine against a brute-force reference, on generated expressions, zones and instants.

The reference walks UTC instants one by one (every minute, at each second the expression
names), asks zoneinfo for the local wall time, and applies SPEC section 1 directly:

* an existing wall time fires if it matches, unless it lies in a fold and the policy
  excludes that pass (zoneinfo's ``fold`` attribute tells which pass it is);
* at an instant where the offset grows (end of a gap), under ``shift``, it fires once if
  any nonexistent wall time of the gap matches.

It shares nothing with the engine's search: no segments, no transition scan, its own day
matching (only the parsed value sets are reused; parsing has its own tests).
"""

from __future__ import annotations

import calendar
import functools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cronctl.cron import CronExpression, CronSyntaxError, Schedule

ZONES = (
    "UTC",
    "America/New_York",
    "Europe/Helsinki",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Europe/Dublin",
    "Asia/Kolkata",
)
WINDOW = 2 * 86400  # brute force searches this far; the engine's answer beyond it must agree
NAIVE_EPOCH = datetime(1970, 1, 1)

SECONDS = ("0", "30", "0,30", "15")
MINUTES = ("*", "0", "30", "*/15", "0,30", "5-10", "*/7", "45", "59")
HOURS = ("*", "*/2", "*/3", "1", "2", "3", "1-3", "0-23", "2,14", "1/5", "0", "23", "*/1")
DOMS = ("*", "?", "1", "L", "*/2", "1-15", "31", "15", "29", "L,15")
MONTHS = ("*", "*/2", "3", "10,11", "JAN-JUN", "FEB", "DEC,JAN", "9-12")
DOWS = ("*", "?", "MON-FRI", "0", "SUN#2", "5L", "6", "1,3,5", "0-6", "FRI#1", "SUN#5", "7")


def _day_ok(expr: CronExpression, year: int, month: int, day: int) -> bool:
    """SPEC day matching, written from scratch on calendar."""
    length = calendar.monthrange(year, month)[1]
    weekday = (calendar.weekday(year, month, day) + 1) % 7  # 0 = Sunday
    dom_ok = day in expr.days or (expr.last_day and day == length)
    dow_ok = (
        weekday in expr.weekdays
        or any(w == weekday and (day - 1) // 7 + 1 == k for w, k in expr.nth_weekdays)
        or (weekday in expr.last_weekdays and day + 7 > length)
    )
    dom_restricted = expr.last_day or set(expr.days) != set(range(1, 32))
    dow_restricted = (
        bool(expr.nth_weekdays or expr.last_weekdays) or set(expr.weekdays) != set(range(7))
    )
    if dom_restricted and dow_restricted:
        return dom_ok or dow_ok
    if dom_restricted:
        return dom_ok
    if dow_restricted:
        return dow_ok
    return True


def _matches(expr: CronExpression, wall: datetime) -> bool:
    return (
        wall.second in expr.seconds
        and wall.minute in expr.minutes
        and wall.hour in expr.hours
        and wall.month in expr.months
        and _day_ok(expr, wall.year, wall.month, wall.day)
    )


def _offset(zone: ZoneInfo, u: int) -> int:
    off = datetime.fromtimestamp(u, zone).utcoffset()
    assert off is not None
    return int(off.total_seconds())


def brute_fires(
    expr: CronExpression, zone: ZoneInfo, gap: str, fold: str, u_from: int, u_to: int
) -> list[int]:
    """Every fire ``f`` with ``u_from <= f <= u_to`` (UTC epoch seconds), sorted."""
    periodic = expr.text.split()[2].startswith("*")
    if gap == "auto":
        gap = "skip" if periodic else "shift"
    if fold == "auto":
        fold = "both" if periodic else "first"
    fires: set[int] = set()
    minute = u_from // 60 * 60
    prev_off = _offset(zone, minute - 1)
    while minute <= u_to:
        off = _offset(zone, minute)
        if off > prev_off and gap == "shift" and minute >= u_from:
            # Offset changes at whole minutes in these zones, so minute is the gap's end.
            for wall in range(minute + prev_off, minute + off, 60):
                start = NAIVE_EPOCH + timedelta(seconds=wall)
                if any(_matches(expr, start.replace(second=s)) for s in expr.seconds):
                    fires.add(minute)
                    break
        prev_off = off
        for s in expr.seconds:
            u = minute + s
            if not u_from <= u <= u_to:
                continue
            local = datetime.fromtimestamp(u, zone)
            if not _matches(expr, local.replace(tzinfo=None)):
                continue
            twin = local.replace(fold=1 - local.fold)
            if twin.utcoffset() != local.utcoffset():  # the wall time happens twice
                if local.fold == 0 and fold not in ("first", "both"):
                    continue
                if local.fold == 1 and fold not in ("second", "both"):
                    continue
            fires.add(u)
        minute += 60
    return sorted(fires)


@functools.cache
def _transitions(zone_name: str) -> tuple[int, ...]:
    """Offset changes of a zone in a few years, found by an hourly scan (independent of
    the engine's own scan)."""
    zone = ZoneInfo(zone_name)
    found = []
    for year in (2011, 2012, 2024, 2026, 2027):
        u = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
        end = int(datetime(year + 1, 1, 1, tzinfo=UTC).timestamp())
        prev = _offset(zone, u)
        while u < end:
            off = _offset(zone, u + 3600)
            if off != prev:
                found.append(u + 3600)
            prev = off
            u += 3600
    return tuple(found) or (int(datetime(2026, 3, 29, tzinfo=UTC).timestamp()),)


@st.composite
def expressions(draw: st.DrawFn) -> CronExpression:
    fields = [draw(st.sampled_from(choices))
              for choices in (SECONDS, MINUTES, HOURS, DOMS, MONTHS, DOWS)]
    try:
        return CronExpression(" ".join(fields))
    except CronSyntaxError:
        assume(False)
        raise  # unreachable: assume(False) raises


@st.composite
def instants(draw: st.DrawFn, zone_name: str) -> int:
    """Mostly near a real transition of the zone; sometimes anywhere in 2010-2030."""
    if draw(st.booleans()):
        base = draw(st.sampled_from(_transitions(zone_name)))
        delta = draw(st.one_of(
            st.integers(-2 * 1440, 1440).map(lambda m: m * 60),
            st.integers(-2 * 86400, 86400),
        ))
        return int(base + delta)
    return draw(st.integers(1262304000, 1893456000))


cases = st.sampled_from(ZONES).flatmap(
    lambda z: st.tuples(
        st.just(z),
        expressions(),
        instants(z),
        st.sampled_from(("auto", "shift", "skip")),
        st.sampled_from(("auto", "first", "second", "both")),
        st.integers(0, 999_999),
        st.booleans(),
    )
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_next_after_matches_brute_force(
    case: tuple[str, CronExpression, int, str, str, int, bool],
) -> None:
    zone_name, expr, u, gap, fold, micros, in_local = case
    zone = ZoneInfo(zone_name)
    sched = Schedule(expr, zone_name, dst_gap=gap, dst_fold=fold)
    t = datetime.fromtimestamp(u, UTC).replace(microsecond=micros if micros % 3 else 0)
    if in_local:
        t = t.astimezone(zone)  # any zone is accepted; the answer is the same instant
    got = sched.next_after(t)
    expected = brute_fires(expr, zone, gap, fold, u + 1, u + WINDOW)
    if expected:
        assert got is not None
        assert int(got.timestamp()) == expected[0], (expr.text, zone_name, gap, fold, t)
        assert got.tzinfo is UTC
    else:
        assert got is None or got.timestamp() > u + WINDOW, (expr.text, zone_name, t, got)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases, st.integers(1, 40))
def test_between_matches_brute_force(
    case: tuple[str, CronExpression, int, str, str, int, bool], limit: int
) -> None:
    zone_name, expr, u, gap, fold, _micros, _in_local = case
    zone = ZoneInfo(zone_name)
    sched = Schedule(expr, zone_name, dst_gap=gap, dst_fold=fold)
    a = datetime.fromtimestamp(u, UTC)
    b = a + timedelta(seconds=WINDOW)
    got = [int(f.timestamp()) for f in sched.between(a, b, limit=limit)]
    assert got == brute_fires(expr, zone, gap, fold, u + 1, u + WINDOW)[:limit]
