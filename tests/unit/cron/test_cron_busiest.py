"""``count_fires`` against the fires ``Schedule.between`` lists, counted by hand."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronctl.cron import Interval, Schedule
from cronctl.cron.busiest import MAX_WINDOW, BusySecond, count_fires

EXPRESSIONS = ("H * * * * *", "H H * * * *", "H/10 * * * * *", "H(0-9) H/5 * * * *",
               "0 H * * * *", "* * * * * *", "0 30 2 * * *", "H H H(1-3) * * *",
               "*/7 * * * * *", "0 0 * * * *")
ZONES = ("UTC", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata")
START = datetime(2026, 3, 8, 5, 0, tzinfo=UTC)  # New York jumps 02:00 -> 03:00 at 07:00Z


def brute(schedules: list[Schedule], after: datetime, until: datetime
          ) -> tuple[int, list[tuple[int, datetime]]]:
    seconds: Counter[datetime] = Counter()
    for schedule in schedules:
        for fire in schedule.between(after, until, limit=10**7):
            seconds[fire.replace(microsecond=0)] += 1
    ranked = sorted(((n, at) for at, n in seconds.items()), key=lambda p: (-p[0], p[1]))
    return sum(seconds.values()), ranked


schedules_strategy = st.lists(
    st.one_of(
        st.builds(lambda e, z, i: Schedule(e, z, hash_id=f"job-{i}"),
                  st.sampled_from(EXPRESSIONS), st.sampled_from(ZONES), st.integers(0, 30)),
        st.builds(lambda s, off: Schedule(Interval(timedelta(seconds=s),
                                                   START + timedelta(microseconds=off))),
                  st.integers(1, 900), st.sampled_from([0, 250_000, 999_999])),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(schedules=schedules_strategy, offset=st.integers(0, 7200),
       length=st.integers(1, 4 * 3600), top=st.integers(0, 12))
def test_counts_equal_the_fires_between_lists(schedules: list[Schedule], offset: int,
                                              length: int, top: int) -> None:
    after = START + timedelta(seconds=offset)
    until = after + timedelta(seconds=length)
    counts = count_fires(schedules, after, until, top=top)
    total, ranked = brute(schedules, after, until)
    assert counts.fires == total and counts.schedules == len(schedules)
    assert [(b.fires, b.at) for b in counts.busiest] == ranked[:top]
    assert counts.peak == (BusySecond(ranked[0][1], ranked[0][0]) if ranked and top else None)


def test_a_thousand_h_jobs_spread_but_do_not_balance() -> None:
    after = datetime(2026, 1, 1, tzinfo=UTC)
    jobs = [Schedule("H * * * * *", hash_id=f"job-{n}") for n in range(1000)]
    counts = count_fires(jobs, after, after + timedelta(hours=1))
    assert counts.fires == 1000 * 60
    peak = counts.peak
    assert peak is not None and 20 <= peak.fires <= 35  # SPEC: some 25-30
    by_second = Counter(min(s.expression.seconds) for s in jobs if s.expression)
    assert peak.fires == max(by_second.values())
    assert peak.at == after + timedelta(seconds=min(
        s for s, n in by_second.items() if n == peak.fires))


def test_dst_gap_counts_as_the_job_fires() -> None:
    # 02:30 New York on 2026-03-08 does not exist: "shift" fires once at 03:00 (07:00Z).
    after = datetime(2026, 3, 8, tzinfo=UTC)
    shift = Schedule("0 30 2 * * *", "America/New_York")
    skip = Schedule("0 30 2 * * *", "America/New_York", dst_gap="skip")
    counts = count_fires([shift, skip], after, after + timedelta(days=1))
    assert counts.fires == 1
    assert counts.busiest == (BusySecond(datetime(2026, 3, 8, 7, tzinfo=UTC), 1),)


def test_empty_and_bad_windows() -> None:
    after = datetime(2026, 1, 1, tzinfo=UTC)
    counts = count_fires([], after, after + timedelta(hours=1))
    assert counts.fires == 0 and counts.busiest == () and counts.peak is None
    with pytest.raises(ValueError, match="longer than 31 days"):
        count_fires([], after, after + MAX_WINDOW + timedelta(seconds=1))
    with pytest.raises(ValueError, match="ends before"):
        count_fires([], after, after - timedelta(seconds=1))
    with pytest.raises(ValueError, match="aware"):
        count_fires([], after.replace(tzinfo=None), after)


def test_fire_seconds_is_what_between_lists() -> None:
    a = datetime(2026, 11, 1, 4, 0, 0, 500_000, tzinfo=UTC)
    b = a + timedelta(hours=4)
    for schedule in (Schedule("0 */10 * * * *", "America/New_York"),
                     Schedule(Interval(timedelta(seconds=7), a))):
        fires = schedule.between(a, b, limit=10**6)
        assert list(schedule.fire_seconds(a, b)) == [
            int(f.timestamp()) for f in fires]
