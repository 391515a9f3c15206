"""SPEC section 1 through the engine's public Python API."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronctl.cron import CronExpression, CronSyntaxError, Schedule

NY = "America/New_York"


def z(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def fires(expr: str, zone: str, a: str, b: str, **policies: str) -> list[str]:
    found = Schedule(expr, zone, **policies).between(z(a), z(b), limit=100)
    for t in found:
        assert t.utcoffset() == timedelta(0)
    return [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in found]


# --- syntax ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "normalized"), [
    ("0 30 2 * * *", "0 30 2 * * *"),
    ("30 2 * * *", "0 30 2 * * *"),              # five fields: second = 0
    ("0 8 * * MON-FRI", "0 0 8 * * MON-FRI"),
    ("0 0 0 ? * *", "0 0 0 * * *"),              # ? = *
    ("0 0 0 * * ?", "0 0 0 * * *"),
])
def test_text_is_normalized(text: str, normalized: str) -> None:
    assert CronExpression(text).text == normalized


def test_explain_reads_like_the_spec() -> None:
    assert CronExpression("0 30 2 * * *").explain() == "At 02:30:00, every day"


@pytest.mark.parametrize(("macro", "same_as"), [
    ("@yearly", "0 0 0 1 1 *"), ("@annually", "0 0 0 1 1 *"), ("@monthly", "0 0 0 1 * *"),
    ("@weekly", "0 0 0 * * 0"), ("@daily", "0 0 0 * * *"), ("@midnight", "0 0 0 * * *"),
    ("@hourly", "0 0 * * * *"),
])
def test_macros(macro: str, same_as: str) -> None:
    start = z("2026-01-01T00:00:30Z")
    end = z("2028-01-01T00:00:00Z")
    assert (Schedule(macro, "UTC").between(start, end, limit=30)
            == Schedule(same_as, "UTC").between(start, end, limit=30))


@pytest.mark.parametrize(("text", "field", "needle"), [
    ("0 61 * * * *", "minute", "61 is out of range 0-59"),
    ("61 * * * * *", "second", "61"),
    ("0 0 24 * * *", "hour", "24"),
    ("0 0 0 0 * *", "day-of-month", "0"),
    ("0 0 0 * 13 *", "month", "13"),
    ("0 0 0 * * 8", "day-of-week", "8"),
    ("0 0 0 * * FRI-MON", "day-of-week", "FRI-MON"),
    ("0 0 0 * * FRI#6", "day-of-week", "FRI#6"),
    ("0 0 0 30 2 *", "day-of-month", "30"),
    ("0 0 0 31 4,6 *", "day-of-month", "31"),
    ("0 0 0 * FOO *", "month", "FOO"),
    ("0 */0 * * * *", "minute", "*/0"),
])
def test_bad_expressions_name_field_text_and_range(text: str, field: str, needle: str) -> None:
    with pytest.raises(CronSyntaxError) as info:
        CronExpression(text)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith(f"{field} field: "), message
    assert needle in message and "\n" not in message


def test_minute_error_is_exactly_the_spec_example() -> None:
    with pytest.raises(CronSyntaxError, match=r"^minute field: 61 is out of range 0-59$"):
        CronExpression("0 61 * * * *")


def test_descending_range_error_names_the_range_and_a_valid_rewrite() -> None:
    with pytest.raises(CronSyntaxError) as info:
        CronExpression("0 0 0 * * FRI-MON")
    assert "0-7" in str(info.value)
    # whatever it suggests after "write" must itself be a valid day-of-week field
    for text in ("FRI-MON", "7-5", "SAT-MON", "WED-TUE"):
        with pytest.raises(CronSyntaxError) as info:
            CronExpression(f"0 0 0 * * {text}")
        hint = str(info.value).split("write ", 1)[1].split(" ")[0]
        CronExpression(f"0 0 0 * * {hint}")


@pytest.mark.parametrize("text", ["", "* * * *", "* * * * * * *", "@reboot", "0 0 0 L-1 * *"])
def test_other_bad_expressions_raise_cron_syntax_error(text: str) -> None:
    with pytest.raises(CronSyntaxError):
        CronExpression(text)


# --- matching -------------------------------------------------------------------------

def test_step_larger_than_the_range() -> None:
    assert fires("*/90 * * * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:03:00Z") == [
        "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"]


def test_sunday_seven_only_when_written() -> None:
    # 2026-01-04 is a Sunday
    assert fires("0 0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", "2026-01-11T00:00:00Z") == [
        "2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]
    assert fires("0 0 0 * * 5-7", "UTC", "2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z") == [
        "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"]
    # A/N runs to 6: 5/2 is Friday only, never Sunday through 7
    assert fires("0 0 0 * * 5/2", "UTC", "2026-01-01T00:00:00Z", "2026-01-15T00:00:00Z") == [
        "2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"]


def test_last_day_and_nth_and_last_weekday() -> None:
    assert fires("0 0 0 L * *", "UTC", "2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z") == [
        "2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"]
    assert fires("0 0 0 * * FRI#3", "UTC", "2026-01-01T00:00:00Z", "2026-04-01T00:00:00Z") == [
        "2026-01-16T00:00:00Z", "2026-02-20T00:00:00Z", "2026-03-20T00:00:00Z"]
    last_fridays = ["2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z"]
    assert fires("0 0 0 * * 5L", "UTC", "2026-01-01T00:00:00Z",
                 "2026-04-01T00:00:00Z") == last_fridays
    assert fires("0 0 0 * * FRIL", "UTC", "2026-01-01T00:00:00Z",
                 "2026-04-01T00:00:00Z") == last_fridays
    assert fires("0 0 0 * * fri#3", "UTC", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z") == [
        "2026-01-16T00:00:00Z"]


@pytest.mark.parametrize("unrestricted", ["*", "?", "*/1", "0-6", "0-7"])
def test_unrestricted_day_of_week_leaves_day_of_month_alone(unrestricted: str) -> None:
    assert fires(f"0 0 0 1 * {unrestricted}", "UTC", "2026-01-01T00:00:00Z",
                 "2026-03-31T00:00:00Z") == ["2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"]


@pytest.mark.parametrize("unrestricted", ["*", "?", "*/1", "1-31"])
def test_unrestricted_day_of_month_leaves_day_of_week_alone(unrestricted: str) -> None:
    # Mondays of January 2026
    assert fires(f"0 0 0 {unrestricted} 1 MON", "UTC", "2026-01-01T00:00:00Z",
                 "2026-02-01T00:00:00Z") == ["2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z",
                                             "2026-01-19T00:00:00Z", "2026-01-26T00:00:00Z"]


def test_both_restricted_is_or() -> None:
    # odd days OR Mondays (2026-01-05 and -12 are Mondays)
    assert fires("0 0 0 */2 * 1", "UTC", "2026-01-02T00:00:00Z", "2026-01-13T00:00:00Z") == [
        "2026-01-03T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-07T00:00:00Z",
        "2026-01-09T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-12T00:00:00Z",
        "2026-01-13T00:00:00Z"]


def test_next_after_is_strict_and_between_is_half_open() -> None:
    sched = Schedule("0 0 * * * *", "UTC")
    assert sched.next_after(z("2026-01-01T01:00:00Z")) == z("2026-01-01T02:00:00Z")
    assert sched.between(z("2026-01-01T00:00:00Z"), z("2026-01-01T02:00:00Z")) == [
        z("2026-01-01T01:00:00Z"), z("2026-01-01T02:00:00Z")]


def test_between_limit_and_default() -> None:
    sched = Schedule("* * * * * *", "UTC")
    a, b = z("2026-01-01T00:00:00Z"), z("2026-01-02T00:00:00Z")
    assert len(sched.between(a, b, limit=7)) == 7
    got = sched.between(a, b)
    assert len(got) == 100 and got == sorted(got) and got[0] == z("2026-01-01T00:00:01Z")


def test_next_after_accepts_any_zone_and_returns_utc() -> None:
    t = datetime(2026, 1, 1, 0, 0, tzinfo=ZoneInfo(NY))  # 05:00Z
    got = Schedule("0 0 0 * * *", "UTC").next_after(t)
    assert got == z("2026-01-02T00:00:00Z") and got is not None
    assert got.utcoffset() == timedelta(0)


def test_schedule_takes_expression_or_text_and_zoneinfo_or_name() -> None:
    t = z("2026-01-01T00:00:00Z")
    a = Schedule(CronExpression("0 0 0 * * *"), ZoneInfo(NY)).next_after(t)
    b = Schedule("0 0 0 * * *", NY, dst_gap="auto", dst_fold="auto").next_after(t)
    assert a == b == z("2026-01-01T05:00:00Z")


def test_policy_values_are_case_insensitive() -> None:
    sched = Schedule("0 30 2 * * *", NY, dst_gap="SKIP", dst_fold="First")
    assert sched.between(z("2026-03-08T00:00:00Z"), z("2026-03-09T00:00:00Z")) == []


def test_never_fires_within_four_years_is_none() -> None:
    # a fifth Friday in February: 2036 is the next one after 2026
    sched = Schedule("0 0 0 * 2 FRI#5", "UTC")
    assert sched.next_after(z("2026-01-01T00:00:00Z")) is None
    assert sched.next_after(z("2035-06-01T00:00:00Z")) == z("2036-02-29T00:00:00Z")
    # Feb 29 fires in leap years (within 4 years)
    assert Schedule("0 0 0 29 2 *", "UTC").next_after(
        z("2026-01-01T00:00:00Z")) == z("2028-02-29T00:00:00Z")


def test_naive_datetime_is_rejected_with_a_value_error() -> None:
    with pytest.raises(ValueError):
        Schedule("@daily", "UTC").next_after(datetime(2026, 1, 1))


def test_unknown_zone_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Schedule("@daily", "Mars/Olympus_Mons")


# --- DST (worked examples of SPEC section 1) --------------------------------------------

def test_gap_shift_skip_auto() -> None:
    day = ("2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z")
    assert fires("0 30 2 * * *", NY, *day, dst_gap="shift") == ["2026-03-08T07:00:00Z"]
    assert fires("0 30 2 * * *", NY, *day, dst_gap="skip") == []
    assert fires("0 30 2 * * *", NY, *day) == ["2026-03-08T07:00:00Z"]  # fixed-time: shift


def test_gap_collapses_and_is_not_fired_twice() -> None:
    day = ("2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z")
    assert fires("0 */10 2 * * *", NY, *day, dst_gap="shift") == ["2026-03-08T07:00:00Z"]
    assert fires("0 0,30 2,3 * * *", NY, *day, dst_gap="shift") == [
        "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"]


def test_gap_auto_skips_for_periodic_across_hours() -> None:
    # 00:00 EST (05Z), then 02:00 does not exist (skipped), 04:00 EDT (08Z), 06:00 (10Z)
    assert fires("0 0 */2 * * *", NY, "2026-03-08T04:00:00Z", "2026-03-08T10:00:00Z") == [
        "2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z", "2026-03-08T10:00:00Z"]
    assert fires("@hourly", NY, "2026-03-08T06:30:00Z", "2026-03-08T08:00:00Z") == [
        "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"]


def test_fold_first_second_both_auto() -> None:
    day = ("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z")
    assert fires("0 30 1 * * *", NY, *day, dst_fold="first") == ["2026-11-01T05:30:00Z"]
    assert fires("0 30 1 * * *", NY, *day, dst_fold="second") == ["2026-11-01T06:30:00Z"]
    assert fires("0 30 1 * * *", NY, *day, dst_fold="both") == [
        "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"]
    assert fires("0 30 1 * * *", NY, *day) == ["2026-11-01T05:30:00Z"]


def test_fold_auto_both_for_every_thirty_minutes() -> None:
    assert fires("0 */30 * * * *", NY, "2026-11-01T04:45:00Z", "2026-11-01T07:00:00Z") == [
        "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z",
        "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"]


def test_next_after_inside_the_fold() -> None:
    sched = Schedule("0 30 1 * * *", NY, dst_fold="first")
    assert sched.next_after(z("2026-11-01T06:15:00Z")) == z("2026-11-02T06:30:00Z")
    both = Schedule("0 30 1 * * *", NY, dst_fold="both")
    assert both.next_after(z("2026-11-01T05:30:00Z")) == z("2026-11-01T06:30:00Z")
    # t given as a local fold datetime (fold=1 is the second 01:30)
    local = datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo(NY), fold=1)
    assert both.next_after(local) == z("2026-11-02T06:30:00Z")


def test_lord_howe_half_hour_shift() -> None:
    # 2026-10-04 02:00 -> 02:30 (+10:30 -> +11)
    assert fires("0 15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z",
                 "2026-10-05T00:00:00Z") == ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]
    # 2026-04-05 02:00 -> 01:30: 01:45 happens at +11 and at +10:30
    assert fires("0 45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z",
                 "2026-04-05T00:00:00Z", dst_fold="both") == [
        "2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z"]


def test_apia_skipped_day() -> None:
    # 2011-12-30 does not exist in Pacific/Apia (-10 -> +14 at midnight)
    got = fires("0 0 12 * * *", "Pacific/Apia", "2011-12-28T00:00:00Z", "2012-01-01T00:00:00Z",
                dst_gap="skip")
    assert got == ["2011-12-28T22:00:00Z", "2011-12-29T22:00:00Z", "2011-12-30T22:00:00Z",
                   "2011-12-31T22:00:00Z"]


def test_dublin_negative_dst() -> None:
    # Europe/Dublin: 2026-03-29 01:00 GMT -> 02:00 IST; 2026-10-25 02:00 IST -> 01:00 GMT
    assert fires("0 30 1 * * *", "Europe/Dublin", "2026-03-28T00:00:00Z",
                 "2026-03-30T00:00:00Z") == ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z"]
    assert fires("0 30 1 * * *", "Europe/Dublin", "2026-10-24T12:00:00Z",
                 "2026-10-26T00:00:00Z", dst_fold="both") == [
        "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"]


def test_results_are_distinct_instants_in_utc() -> None:
    got = Schedule("0 */15 * * * *", NY).between(z("2026-11-01T04:00:00Z"),
                                                   z("2026-11-01T08:00:00Z"), limit=100)
    assert len(got) == 16 and len({t.timestamp() for t in got}) == 16
    assert all(t.tzinfo is not None and t.utcoffset() == timedelta(0) for t in got)


# --- intervals ------------------------------------------------------------------------

def test_every_is_anchored_at_the_epoch() -> None:
    sched = Schedule("@every 15m", "UTC")
    assert sched.next_after(z("2026-01-01T00:07:13Z")) == z("2026-01-01T00:15:00Z")
    assert fires("@every 90s", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:04:30Z") == [
        "2026-01-01T00:01:30Z", "2026-01-01T00:03:00Z", "2026-01-01T00:04:30Z"]


def test_every_ignores_zone_and_dst() -> None:
    a = Schedule("@every 1h", NY).between(z("2026-03-08T05:00:00Z"), z("2026-03-08T09:00:00Z"))
    assert a == [z(f"2026-03-08T0{h}:00:00Z") for h in (6, 7, 8, 9)]


def test_schedule_pickles() -> None:
    sched = Schedule("0 30 2 * * *", NY)
    copy = pickle.loads(pickle.dumps(sched))
    t = z("2026-03-07T12:00:00Z")
    assert copy.next_after(t) == sched.next_after(t) == z("2026-03-08T07:00:00Z")


def test_now_argument_is_any_aware_datetime() -> None:
    now = datetime.now(UTC)
    nxt = Schedule("* * * * * *", "UTC").next_after(now)
    assert nxt is not None and timedelta(0) < nxt - now <= timedelta(seconds=1)


@pytest.mark.parametrize(("expr", "gap", "fold"), [
    # periodic across hours (hour field starts with *): gap skip, fold both
    ("0 30 * * * *", ["06:30", "07:30"], ["05:30", "06:30"]),
    ("0 30 */1 * * *", ["06:30", "07:30"], ["05:30", "06:30"]),
    # fixed-time (even when the set is every hour): gap shift, fold first
    ("0 30 0-23 * * *", ["06:30", "07:00", "07:30"], ["05:30"]),
    ("0 30 1-3 * * *", ["06:30", "07:00", "07:30"], ["05:30"]),
])
def test_auto_policies_follow_the_hour_field_text(expr: str, gap: list[str],
                                                  fold: list[str]) -> None:
    sched = Schedule(expr, NY)
    got_gap = sched.between(z("2026-03-08T06:00:00Z"), z("2026-03-08T08:00:00Z"))
    got_fold = sched.between(z("2026-11-01T05:00:00Z"), z("2026-11-01T07:00:00Z"))
    assert [t.strftime("%H:%M") for t in got_gap] == gap
    assert [t.strftime("%H:%M") for t in got_fold] == fold


def test_between_empty_cases() -> None:
    sched = Schedule("@hourly", "UTC")
    assert sched.between(z("2026-01-02T00:00:00Z"), z("2026-01-01T00:00:00Z")) == []
    assert sched.between(z("2026-01-01T00:00:00Z"), z("2026-01-02T00:00:00Z"), limit=0) == []
