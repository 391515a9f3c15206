"""Schedule: searching, the horizon, special days, intervals, argument checking."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from cronctl.cron import (
    HORIZON,
    CronExpression,
    CronSyntaxError,
    DstFold,
    DstGap,
    Interval,
    Schedule,
    UnknownTimezoneError,
)


def z(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def days_of(sched: Schedule, a: str, b: str) -> list[str]:
    return [f.date().isoformat() for f in sched.between(z(a), z(b), limit=1000)]


def test_next_after_is_strictly_after() -> None:
    sched = Schedule("0 0 8 * * *")
    assert sched.next_after(z("2026-01-01T07:59:59")) == z("2026-01-01T08:00")
    assert sched.next_after(z("2026-01-01T08:00")) == z("2026-01-02T08:00")
    assert sched.next_after(z("2026-01-01T07:59:59.999999")) == z("2026-01-01T08:00")
    assert sched.next_after(z("2026-01-01T08:00:00.000001")) == z("2026-01-02T08:00")


def test_every_second_and_rollovers() -> None:
    sched = Schedule("* * * * * *")
    assert sched.next_after(z("2026-12-31T23:59:59")) == z("2027-01-01T00:00")
    assert Schedule("59 59 23 31 12 *").next_after(z("2026-06-01T00:00")) == z(
        "2026-12-31T23:59:59"
    )


def test_result_is_utc_whatever_the_input_zone() -> None:
    sched = Schedule("0 0 8 * * *", "Europe/Helsinki")
    t = datetime(2026, 6, 1, 12, tzinfo=ZoneInfo("America/New_York"))
    got = sched.next_after(t)
    assert got == z("2026-06-02T05:00") and got is not None and got.tzinfo is UTC


def test_fixed_offset_timezone_objects() -> None:
    sched = Schedule("0 0 8 * * *", timezone(timedelta(hours=5, minutes=30)))
    assert sched.next_after(z("2026-01-01T00:00")) == z("2026-01-01T02:30")
    assert Schedule("0 0 8 * * *", "Etc/GMT+5").next_after(z("2026-01-01T00:00")) == z(
        "2026-01-01T13:00"
    )


def test_leap_day() -> None:
    sched = Schedule("0 0 0 29 2 *")
    assert sched.next_after(z("2024-03-01T00:00")) == z("2028-02-29T00:00")  # within 4 years
    assert sched.next_after(z("2028-02-28T00:00")) == z("2028-02-29T00:00")


def test_horizon_four_years() -> None:
    assert timedelta(days=4 * 365 + 1) == HORIZON
    # 2100 is not a leap year: the next Feb 29 after 2096 is in 2104, 8 years on.
    assert Schedule("0 0 0 29 2 *").next_after(z("2096-03-01T00:00")) is None
    # A fifth Monday in February needs a leap year starting on a Monday: 2016, then 2044.
    sched = Schedule("0 0 0 * 2 MON#5")
    assert sched.next_after(z("2016-01-01T00:00")) == z("2016-02-29T00:00")
    assert sched.next_after(z("2016-03-01T00:00")) is None
    assert sched.next_after(z("2043-03-01T00:00")) == z("2044-02-29T00:00")


def test_far_future_stops_cleanly() -> None:
    assert Schedule("* * * * * *").next_after(datetime(9999, 12, 31, tzinfo=UTC)) is None
    assert Schedule("0 0 8 * * *", "Europe/Helsinki").next_after(
        datetime(9999, 6, 1, tzinfo=UTC)) is None


def test_last_day_of_month() -> None:
    sched = Schedule("0 0 0 L * *")
    assert days_of(sched, "2024-01-01T00:00", "2024-05-01T00:00") == [
        "2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30",
    ]
    assert days_of(sched, "2023-02-01T00:00", "2023-03-01T00:00") == ["2023-02-28"]


def test_nth_weekday() -> None:
    # 2026-01: Thursday the 1st; Fridays are 2, 9, 16, 23, 30.
    assert days_of(Schedule("0 0 0 * * FRI#3"), "2026-01-01T00:00", "2026-03-01T00:00") == [
        "2026-01-16", "2026-02-20",
    ]
    assert days_of(Schedule("0 0 0 * * 5#5"), "2026-01-01T00:00", "2026-06-01T00:00") == [
        "2026-01-30", "2026-05-29",
    ]


def test_last_weekday() -> None:
    assert days_of(Schedule("0 0 0 * * 5L"), "2026-01-01T00:00", "2026-04-01T00:00") == [
        "2026-01-30", "2026-02-27", "2026-03-27",
    ]
    assert days_of(Schedule("0 0 0 * * SUNL"), "2026-01-01T00:00", "2026-02-01T00:00") == [
        "2026-01-25",
    ]


def test_or_rule_when_both_day_fields_are_restricted() -> None:
    # SPEC: "0 0 0 */2 * 1" fires on odd days AND on Mondays.
    got = days_of(Schedule("0 0 0 */2 * 1"), "2026-05-31T12:00", "2026-06-09T12:00")
    # June 2026: the 1st and 8th are Mondays.
    assert got == ["2026-06-01", "2026-06-03", "2026-06-05", "2026-06-07", "2026-06-08",
                   "2026-06-09"]


def test_and_when_only_one_day_field_is_restricted() -> None:
    # "*/1" and "0-6" are not restrictions: the other field alone decides.
    monday = days_of(Schedule("0 0 0 */1 * MON"), "2026-05-31T12:00", "2026-06-14T12:00")
    assert monday == ["2026-06-01", "2026-06-08"]
    first = days_of(Schedule("0 0 0 1 * 0-6"), "2026-06-01T00:00", "2026-08-15T00:00")
    assert first == ["2026-07-01", "2026-08-01"]


def test_macros_fire() -> None:
    t = z("2026-06-10T10:20:30")
    assert Schedule("@yearly").next_after(t) == z("2027-01-01T00:00")
    assert Schedule("@monthly").next_after(t) == z("2026-07-01T00:00")
    assert Schedule("@weekly").next_after(t) == z("2026-06-14T00:00")  # Sunday
    assert Schedule("@daily").next_after(t) == z("2026-06-11T00:00")
    assert Schedule("@hourly").next_after(t) == z("2026-06-10T11:00")


def test_between_limits_and_orders() -> None:
    sched = Schedule("*/10 * * * * *")
    a, b = z("2026-01-01T00:00"), z("2026-01-01T00:01")
    got = sched.between(a, b)
    assert got == [a + timedelta(seconds=10 * k) for k in range(1, 7)]  # (a, b]
    assert sched.between(a, b, limit=2) == got[:2]
    assert sched.between(a, b, limit=0) == []
    assert sched.between(b, a) == []
    assert len(Schedule("* * * * * *").between(a, a + timedelta(days=1))) == 100


def test_iter_after() -> None:
    fires = Schedule("0 0 0 1 * *").iter_after(z("2026-01-15T00:00"))
    assert [next(fires) for _ in range(3)] == [
        z("2026-02-01T00:00"), z("2026-03-01T00:00"), z("2026-04-01T00:00"),
    ]
    assert list(Schedule("0 0 0 29 2 *").iter_after(z("2096-03-01T00:00"))) == []


def test_naive_datetimes_are_refused() -> None:
    sched = Schedule("@daily")
    with pytest.raises(ValueError, match="timezone-aware"):
        sched.next_after(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        sched.between(datetime(2026, 1, 1), z("2026-01-02T00:00"))
    with pytest.raises(ValueError, match="timezone-aware"):
        Schedule("@every 5m").next_after(datetime(2026, 1, 1))


def test_unknown_zone() -> None:
    for bad in ("Foo/Bar", "", "../etc/passwd", "Europe"):
        with pytest.raises(UnknownTimezoneError) as info:
            Schedule("@daily", bad)
        assert str(info.value) == f"unknown time zone {bad!r}"
        assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("given", "expected"),
    [("SHIFT", DstGap.SHIFT), (" skip ", DstGap.SKIP), (DstGap.SKIP, DstGap.SKIP)],
)
def test_gap_policy_values(given: str, expected: DstGap) -> None:
    assert Schedule("0 30 2 * * *", dst_gap=given).dst_gap is expected


@pytest.mark.parametrize("bad", ["shifted", "", "first"])
def test_bad_policy_values(bad: str) -> None:
    with pytest.raises(ValueError, match="dst_gap: .* is not one of auto, shift, skip"):
        Schedule("@daily", dst_gap=bad)


def test_fold_policy_values() -> None:
    assert Schedule("@daily", dst_fold="Both").dst_fold is DstFold.BOTH
    assert Schedule("@daily").dst_fold is DstFold.FIRST
    assert Schedule("@hourly").dst_fold is DstFold.BOTH
    with pytest.raises(ValueError, match="dst_fold"):
        Schedule("@daily", dst_fold="last")


def test_schedule_value_semantics() -> None:
    a = Schedule("*/15 * * * *", "Europe/Helsinki")
    b = Schedule(CronExpression("0 0,15,30,45 * * * *"), ZoneInfo("Europe/Helsinki"))
    assert a == b and hash(a) == hash(b)
    assert a != Schedule("*/15 * * * *", "UTC")
    with pytest.raises(AttributeError):
        a.timezone = "UTC"  # type: ignore[misc]
    assert a.text == "0 */15 * * * *"
    assert a.explain() == "Every 15 minutes"
    assert "Europe/Helsinki" in repr(a)
    assert pickle.loads(pickle.dumps(a)) == a
    every = Schedule("@every 90s")
    assert pickle.loads(pickle.dumps(every)) == every


def test_bad_expression_through_schedule() -> None:
    with pytest.raises(CronSyntaxError, match="minute field: 61 is out of range 0-59"):
        Schedule("61 * * * *")


class TestIntervals:
    def test_every_15m_fires_on_the_quarter_hours(self) -> None:
        sched = Schedule("@every 15m", "Europe/Helsinki")  # zone ignored: elapsed time
        assert sched.interval is not None and sched.expression is None
        assert sched.next_after(z("2026-03-29T00:07:13")) == z("2026-03-29T00:15")
        assert sched.next_after(z("2026-03-29T00:15")) == z("2026-03-29T00:30")

    def test_every_90s_from_the_epoch(self) -> None:
        sched = Schedule("@every 90s")
        got = sched.next_after(z("1970-01-01T00:00"))
        assert got == z("1970-01-01T00:01:30")
        assert sched.next_after(z("2026-01-01T00:00")) == z("2026-01-01T00:01:30")  # 90 | 86400*

    def test_anchor(self) -> None:
        sched = Schedule(Interval(timedelta(hours=1), anchor=z("2026-01-01T00:20")))
        assert sched.next_after(z("2020-05-05T05:05")) == z("2020-05-05T05:20")
        assert sched.between(z("2026-01-01T00:00"), z("2026-01-01T03:00")) == [
            z("2026-01-01T00:20"), z("2026-01-01T01:20"), z("2026-01-01T02:20"),
        ]

    def test_an_anchor_that_names_no_instant_is_a_syntax_error(self) -> None:
        # America/New_York 2026: 03-08 02:00 EST -> 03:00 EDT (gap), 11-01 02:00 EDT ->
        # 01:00 EST (01:xx twice).
        zone = ZoneInfo("America/New_York")
        with pytest.raises(CronSyntaxError, match=r"anchor 2026-03-08 02:30:00 does not exist "
                                                  r"in America/New_York.*DST gap"):
            Interval(timedelta(hours=1), anchor=datetime(2026, 3, 8, 2, 30, tzinfo=zone))
        for text in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00"):
            with pytest.raises(CronSyntaxError, match="out of range"):
                Interval(timedelta(hours=1), anchor=datetime.fromisoformat(text))
        first = Interval(timedelta(hours=1), anchor=datetime(2026, 11, 1, 1, 30, tzinfo=zone))
        second = Interval(timedelta(hours=1),
                          anchor=datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=zone))
        assert (first.anchor, second.anchor) == (z("2026-11-01T05:30"), z("2026-11-01T06:30"))

    def test_no_dst(self) -> None:
        sched = Schedule("@every 1h", "America/New_York")
        got = sched.between(z("2026-03-08T05:30"), z("2026-03-08T08:30"))
        assert got == [z("2026-03-08T06:00"), z("2026-03-08T07:00"), z("2026-03-08T08:00")]

    def test_text_and_explain(self) -> None:
        assert Interval.parse("@every 90s").text == "@every 1m30s"
        assert Interval.parse("@every 90s").explain() == "Every 90 seconds"
        assert Interval.parse("@every 1h30m").explain() == "Every 1 hour 30 minutes"
        assert Interval.parse("@every 15m").explain() == "Every 15 minutes"
        assert Interval.parse("@EVERY 1d").explain() == "Every day"

    @pytest.mark.parametrize("bad", ["@every", "@every 0s", "@every 500ms", "@every soon"])
    def test_bad_intervals(self, bad: str) -> None:
        with pytest.raises(CronSyntaxError):
            Schedule(bad)

    def test_between_limit(self) -> None:
        sched = Schedule("@every 1s")
        assert len(sched.between(z("2026-01-01T00:00"), z("2026-01-02T00:00"), limit=5)) == 5
        assert sched.between(z("2026-01-01T00:00"), z("2026-01-02T00:00"), limit=0) == []

    def test_far_future_stops_cleanly(self) -> None:
        # Found by fuzzing `next '@every 1s' --from 9999-12-31T23:59:59Z`: the next fire
        # would lie past datetime.max; like a cron expression, the answer is "none".
        # Fires stay in the range cron expressions search (year 2 to 9998-12-01), so each
        # can be shown in any zone: 0001-01-01T00:01:30Z has no New York local time.
        end = datetime.max.replace(tzinfo=UTC)
        assert Schedule("@every 1s").next_after(end) is None
        assert Schedule("@every 36500d").next_after(datetime(9964, 9, 9, tzinfo=UTC)) is None
        last = datetime(9998, 12, 1, tzinfo=UTC)
        assert Schedule("@every 1s").between(last - timedelta(seconds=1), end) == [last]
        assert list(Schedule("@every 1d").iter_after(last - timedelta(days=2))) == [
            last - timedelta(days=1), last]
        start = datetime.min.replace(tzinfo=UTC)
        assert Schedule("@every 90s").next_after(start) == datetime(2, 1, 1, tzinfo=UTC)
        assert Schedule("* * * * * *").next_after(start) == datetime(2, 1, 1, tzinfo=UTC)


def test_a_far_jump_does_not_scan_the_years_between(monkeypatch: pytest.MonkeyPatch) -> None:
    """A zone's offset changes are found by scanning ~388-day buckets; a search far from
    the ones known starts a new range instead of scanning every bucket between (from
    2026 to the year 2 was ~2,000 buckets and ~9 s). The answers stay exact."""
    from cronctl.cron import zones

    scanned: list[int] = []
    original = zones.Timeline._scan

    def counting(self: zones.Timeline, bucket: int) -> list[tuple[int, int, int]]:
        scanned.append(bucket)
        return original(self, bucket)

    years = (2026, 2, 2500, 2026, 1900)
    alone = []
    for y in years:  # each on a timeline of its own: the reference
        monkeypatch.setattr(zones, "_TIMELINES", {})
        alone.append(Schedule("0 30 2 * * *", "Europe/Paris").next_after(
            datetime(y, 3, 30, tzinfo=UTC)))
    monkeypatch.setattr(zones.Timeline, "_scan", counting)
    monkeypatch.setattr(zones, "_TIMELINES", {})
    paris = Schedule("0 30 2 * * *", "Europe/Paris")
    shared = [paris.next_after(datetime(y, 3, 30, tzinfo=UTC)) for y in years]
    assert shared == alone
    assert alone[0] == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)  # CEST since March 29
    assert len(scanned) < 40, len(scanned)
