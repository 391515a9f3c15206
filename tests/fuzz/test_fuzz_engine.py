"""Engine properties around real DST transitions, for every zone family and policy pair.

* ``Schedule.between(a, b)`` equals chained ``next_after`` from ``a`` (stopping at ``b``):
  the two entry points must never disagree, wherever ``a`` and ``b`` fall (inside a fold's
  first or second pass, inside a gap, right on a transition).
* ``next_after(t)`` is strictly later than ``t`` in UTC, for ``t`` inside folds and gaps,
  given in UTC or as a local time of either fold.
* ``iter_after`` yields strictly increasing UTC instants.

Instants are drawn near the zone's real offset changes, found here by probing zoneinfo
(independent of the engine's own transition scan).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

import pytest
from fuzz_support import deadline, fuzz_settings
from hypothesis import assume, given
from hypothesis import strategies as st

from cronctl.cron import CronExpression, CronSyntaxError, Schedule

FAMILIES = (
    "UTC",
    "America/New_York",
    "Europe/Helsinki",
    "Australia/Lord_Howe",  # 30-minute shifts
    "Pacific/Apia",  # a whole skipped day (2011-12-30)
    "Europe/Dublin",  # negative DST
)
# A few zones drawn from the whole database (odd historical offsets, LMT in seconds,
# double summer time, zones that abolished DST...).
ALL_ZONES = tuple(sorted(z for z in available_timezones() if "/" in z or z == "UTC"))
GAPS = ("auto", "shift", "skip")
FOLDS = ("auto", "first", "second", "both")

SECONDS = ("0", "30", "0,30", "*/20", "15", "*")
MINUTES = ("*", "0", "30", "*/15", "0,30", "5-10", "*/7", "45", "59", "15,45")
HOURS = ("*", "*/2", "*/3", "0", "1", "2", "3", "4", "1-3", "0-23", "2,14", "1/5", "23",
         "*/1", "2-4")
DOMS = ("*", "?", "1", "L", "*/2", "1-15", "31", "15", "29", "L,15", "25-31", "30")
MONTHS = ("*", "*/2", "3", "10,11", "JAN-JUN", "FEB", "DEC,JAN", "9-12", "4", "OCT", "MAR")
DOWS = ("*", "?", "MON-FRI", "0", "SUN#2", "5L", "6", "1,3,5", "0-6", "SUN#5", "7", "SUNL")


def _offset(zone: ZoneInfo, u: int) -> int:
    off = datetime.fromtimestamp(u, zone).utcoffset()
    assert off is not None
    return int(off.total_seconds())


@functools.cache
def transitions(zone_name: str, year: int) -> tuple[tuple[int, int], ...]:
    """The offset changes of one zone in one year: (UTC epoch second, size in seconds;
    > 0 a gap, < 0 a fold)."""
    zone = ZoneInfo(zone_name)
    u = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(year + 1, 1, 1, tzinfo=UTC).timestamp())
    found = []
    prev = _offset(zone, u)
    step = 3 * 3600
    while u < end:
        nxt = min(u + step, end)
        off = _offset(zone, nxt)
        if off != prev:
            lo, hi = u, nxt  # offset(lo) == prev != offset(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _offset(zone, mid) == prev:
                    lo = mid
                else:
                    hi = mid
            off = _offset(zone, hi)
            found.append((hi, off - prev))
            u, prev = hi, off
            continue
        u, prev = nxt, off
    return tuple(found)


@st.composite
def expressions(draw: st.DrawFn, near: tuple[datetime, ...] = ()) -> CronExpression:
    """Often ``*`` and the local hours of ``near``: fires near the transition are what the
    tests need, and restricted day fields rarely match the one day a transition is on."""
    hours = sorted({str(t.hour) for t in near}
                   | {f"{t.hour}-{min(t.hour + 1, 23)}" for t in near}) or ["*"]
    time_fields = [
        draw(st.one_of(st.just("*"), st.sampled_from(SECONDS))),
        draw(st.one_of(st.just("*"), st.sampled_from(MINUTES))),
        draw(st.one_of(st.just("*"), st.sampled_from(hours), st.sampled_from(HOURS))),
    ]
    day_fields = [draw(st.sampled_from(choices)) if draw(st.sampled_from((0, 0, 0, 1))) else "*"
                  for choices in (DOMS, MONTHS, DOWS)]
    fields = time_fields + day_fields
    try:
        return CronExpression(" ".join(fields))
    except CronSyntaxError:
        assume(False)
        raise  # unreachable


@st.composite
def zones(draw: st.DrawFn) -> str:
    """A zone family (each as likely) or, one time in five, any zone of the database."""
    name = draw(st.sampled_from((*FAMILIES, *FAMILIES[1:], "", "")))
    return name or draw(st.sampled_from(ALL_ZONES))


@st.composite
def near_transition(draw: st.DrawFn, zone_name: str) -> tuple[int, int]:
    """A real offset change of the zone and its size (or a plain instant and 0 when the
    year has none)."""
    if zone_name == "Pacific/Apia" and draw(st.booleans()):
        year = 2011
    elif zone_name in FAMILIES:
        year = draw(st.sampled_from((2011, 2024, 2026, 2027)))
    else:
        year = draw(st.integers(1890, 2037))
        # Most zones change their offset in few years: look for the nearest one that does.
        for candidate in (*range(year, min(year + 15, 2038)), *range(year - 1, 1880, -5)):
            if transitions(zone_name, candidate):
                year = candidate
                break
    found = transitions(zone_name, year)
    if not found:
        return int(datetime(year, 6, 15, tzinfo=UTC).timestamp()), 0
    return draw(st.sampled_from(found))


def _delta(low_minutes: int, high_minutes: int) -> st.SearchStrategy[int]:
    """Seconds around a transition: whole minutes (where fires are) or any second."""
    return st.one_of(
        st.integers(low_minutes, high_minutes).map(lambda m: m * 60),
        st.integers(low_minutes * 60, high_minutes * 60),
        st.sampled_from((-1, 0, 1)),
    )


def _chained(sched: Schedule, a: datetime, b: datetime, limit: int) -> list[datetime]:
    out: list[datetime] = []
    t = a
    while len(out) < limit:
        fire = sched.next_after(t)
        if fire is None or fire > b:
            break
        assert fire > t, (t, fire)
        out.append(fire)
        t = fire
    return out


POLICY_PAIRS = [(gap, fold) for gap in GAPS for fold in FOLDS]


@pytest.mark.parametrize(("gap", "fold"), POLICY_PAIRS)
@fuzz_settings(60)
@given(st.data())
def test_between_equals_chained_next_after(gap: str, fold: str, data: st.DataObject) -> None:
    zone_name = data.draw(zones(), label="zone")
    zone = ZoneInfo(zone_name)
    base, size = data.draw(near_transition(zone_name), label="transition, size")
    # b close to the transition, often within its size of it (a fold's first or second
    # pass, the wall times around a gap): that is where the search limit meets DST. a a
    # little or a lot before b (close, so that limit does not end the list early).
    reach = max(abs(size) // 60, 1)
    u_b = base + data.draw(
        st.one_of(_delta(-reach, 0), _delta(-reach, reach), _delta(-180, 180),
                  _delta(-4 * 60, 36 * 60)),
        label="b - transition",
    )
    u_a = u_b - data.draw(st.one_of(_delta(0, 120), _delta(0, 2 * 1440)), label="b - a")
    assume(u_a <= u_b)
    a = _pick(data, u_a, zone, "a")
    b = _pick(data, u_b, zone, "b")
    expr = data.draw(expressions((a.astimezone(zone), b.astimezone(zone))), label="expr")
    limit = data.draw(st.sampled_from((1, 3, 50, 500)), label="limit")
    sched = Schedule(expr, zone, dst_gap=gap, dst_fold=fold)
    with deadline(10):
        got = sched.between(a, b, limit)
        expected = _chained(sched, a, b, limit)
    assert got == expected, (sched, a.isoformat(), b.isoformat())
    assert all(f.tzinfo is UTC for f in got)
    assert all(a < f <= b for f in got)
    assert got == sorted(set(got))


@pytest.mark.parametrize(("gap", "fold"), POLICY_PAIRS)
@fuzz_settings(25)
@given(st.data())
def test_between_ending_inside_a_fold_or_gap(gap: str, fold: str, data: st.DataObject) -> None:
    """The same property, aimed: b inside a fold's first or second pass, or in the hour
    around a gap, and a shortly before it (where a window's end meets a transition; the
    Europe/Helsinki autumn case of issue 12)."""
    zone_name = data.draw(st.sampled_from(FAMILIES[1:]), label="zone")
    zone = ZoneInfo(zone_name)
    base, size = data.draw(near_transition(zone_name), label="transition, size")
    reach = abs(size)
    u_b = base + data.draw(st.integers(-reach, reach), label="b - transition")
    u_a = u_b - data.draw(st.integers(0, 2 * reach), label="b - a")
    a = _pick(data, u_a, zone, "a")
    b = _pick(data, u_b, zone, "b")
    expr = data.draw(expressions((a.astimezone(zone), b.astimezone(zone))), label="expr")
    sched = Schedule(expr, zone, dst_gap=gap, dst_fold=fold)
    with deadline(10):
        got = sched.between(a, b, 50)
        expected = _chained(sched, a, b, 50)
    assert got == expected, (sched, a.isoformat(), b.isoformat())


def _pick(data: st.DataObject, u: int, zone: ZoneInfo, label: str) -> datetime:
    t = datetime.fromtimestamp(u, UTC)
    if data.draw(st.booleans(), label=f"{label} has microseconds"):
        t = t.replace(microsecond=data.draw(st.integers(0, 999_999), label=f"{label} µs"))
    if data.draw(st.booleans(), label=f"{label} as local time"):
        t = t.astimezone(zone)
    return t


@pytest.mark.parametrize(("gap", "fold"), POLICY_PAIRS)
@fuzz_settings(30)
@given(st.data())
def test_next_after_is_strictly_later_in_utc(gap: str, fold: str, data: st.DataObject) -> None:
    """Also for ``t`` given as a local wall time inside a fold (either ``fold``) or a gap
    (a time that does not exist: zoneinfo still maps it to some instant)."""
    zone_name = data.draw(zones(), label="zone")
    zone = ZoneInfo(zone_name)
    base, size = data.draw(near_transition(zone_name), label="transition, size")
    reach = max(abs(size) // 60, 1)
    u = base + data.draw(st.one_of(_delta(-reach, reach), _delta(-180, 180)),
                         label="t - transition")
    utc = datetime.fromtimestamp(u, UTC)
    expr = data.draw(expressions((utc.astimezone(zone),)), label="expr")
    sched = Schedule(expr, zone, dst_gap=gap, dst_fold=fold)
    wall = utc.astimezone(zone).replace(tzinfo=None)
    wall = wall + timedelta(minutes=data.draw(st.integers(-90, 90), label="wall shift"))
    candidates = [utc, utc.astimezone(zone), wall.replace(tzinfo=zone, fold=0),
                  wall.replace(tzinfo=zone, fold=1)]
    with deadline(10):
        for t in candidates:
            fire = sched.next_after(t)
            if fire is None:
                continue
            assert fire.tzinfo is UTC
            assert fire.timestamp() > t.timestamp(), (sched, t.isoformat(), fire)
            # And nothing fires in between: between(t, fire) ends with exactly that fire.
            assert sched.between(t, fire, 1) == [fire], (sched, t.isoformat(), fire)
            again = sched.next_after(fire)
            assert again is None or again > fire
