"""Parsing: every item form, names, macros, normalization, value semantics, errors."""

from __future__ import annotations

import copy
import pickle

import pytest

from cronctl.cron import MACROS, CronExpression, CronSyntaxError


def test_six_fields_seconds_first() -> None:
    expr = CronExpression("5 4 3 2 1 *")
    assert (expr.seconds, expr.minutes, expr.hours) == ({5}, {4}, {3})
    assert (expr.days, expr.months) == ({2}, {1})


def test_five_fields_mean_second_zero() -> None:
    expr = CronExpression("4 3 2 1 *")
    assert expr.seconds == {0}
    assert expr.text == "0 4 3 2 1 *"


@pytest.mark.parametrize(
    ("field", "text", "values"),
    [
        ("minutes", "*", set(range(60))),
        ("minutes", "7", {7}),
        ("minutes", "10-13", {10, 11, 12, 13}),
        ("minutes", "*/20", {0, 20, 40}),
        ("minutes", "10-30/10", {10, 20, 30}),
        ("minutes", "50/4", {50, 54, 58}),
        ("minutes", "1,5-6,*/30", {0, 1, 5, 6, 30}),
        ("minutes", "*/90", {0}),  # a step may exceed the range
        ("hours", "*/1", set(range(24))),
        ("hours", "22-23/5", {22}),
        ("days", "*/10", {1, 11, 21, 31}),
        ("months", "JAN,mar,Dec", {1, 3, 12}),
        ("months", "feb-APR", {2, 3, 4}),
        ("months", "*/4", {1, 5, 9}),
        ("weekdays", "*", set(range(7))),
        ("weekdays", "*/2", {0, 2, 4, 6}),
        ("weekdays", "7", {0}),
        ("weekdays", "5-7", {5, 6, 0}),
        ("weekdays", "0-7", set(range(7))),
        ("weekdays", "mon-FRI", {1, 2, 3, 4, 5}),
        ("weekdays", "3/2", {3, 5}),  # A/N runs to 6, not 7
        ("weekdays", "SAT,sun", {6, 0}),
    ],
)
def test_item_forms(field: str, text: str, values: set[int]) -> None:
    parts = {"minutes": 1, "hours": 2, "days": 3, "months": 4, "weekdays": 5}
    fields = ["0", "0", "0", "*", "*", "*"]
    fields[parts[field]] = text
    assert getattr(CronExpression(" ".join(fields)), field) == values


def test_question_mark_is_star_in_day_fields() -> None:
    assert CronExpression("0 0 0 ? * MON") == CronExpression("0 0 0 * * MON")
    assert CronExpression("0 0 0 1 * ?").text == "0 0 0 1 * *"


def test_last_day_and_weekday_forms() -> None:
    expr = CronExpression("0 0 0 L * *")
    assert expr.last_day and expr.dom_restricted
    expr = CronExpression("0 0 0 * * FRI#3,1#1")
    assert expr.nth_weekdays == {(5, 3), (1, 1)}
    expr = CronExpression("0 0 0 * * 5L,sunL,7L")
    assert expr.last_weekdays == {5, 0}
    assert CronExpression("0 0 0 * * 7#2").nth_weekdays == {(0, 2)}


@pytest.mark.parametrize(("macro", "expansion"), sorted(MACROS.items()))
def test_macros(macro: str, expansion: str) -> None:
    assert CronExpression(macro).text == expansion
    assert CronExpression(macro.upper()) == CronExpression(expansion)


def test_normalized_text() -> None:
    assert CronExpression("  0  8 * *   mon-fri ").text == "0 0 8 * * MON-FRI"
    assert CronExpression("@daily").text == "0 0 0 * * *"


def test_restriction_is_decided_on_sets() -> None:
    for unrestricted in ("*", "?", "*/1", "1-31"):
        assert not CronExpression(f"0 0 0 {unrestricted} * *").dom_restricted
    for unrestricted in ("*", "?", "*/1", "0-6", "0-7", "1-7", "0,1,2,3,4,5,6"):
        assert not CronExpression(f"0 0 0 * * {unrestricted}").dow_restricted
    for restricted in ("*/2", "1-15", "L", "1-31,L"):
        assert CronExpression(f"0 0 0 {restricted} * *").dom_restricted
    for restricted in ("*/2", "1-5", "MON#1", "5L"):
        assert CronExpression(f"0 0 0 * * {restricted}").dow_restricted


def test_equal_sets_are_equal_expressions() -> None:
    assert CronExpression("*/15 * * * *") == CronExpression("0 0,15,30,45 * * * *")
    assert CronExpression("0 0 0 * * 0-7") == CronExpression("0 0 0 * * *")
    assert hash(CronExpression("0 0 0 * * 1-5")) == hash(CronExpression("0 0 0 * * MON-FRI"))
    assert CronExpression("0 0 0 * * 1") != CronExpression("0 0 0 * * 2")
    # Same sets, but the hour field's spelling changes the DST policy: not equal.
    assert CronExpression("0 0 * * * *") != CronExpression("0 0 0-23 * * *")
    assert CronExpression("0 0 * * * *") == CronExpression("0 0 */1 * * *")


def test_periodic_hours_reads_the_written_hour_field() -> None:
    assert CronExpression("@hourly").periodic_hours
    assert CronExpression("0 */2 * * *").periodic_hours
    assert not CronExpression("0 0-23 * * *").periodic_hours
    assert not CronExpression("@daily").periodic_hours


def test_immutable_hashable_picklable() -> None:
    expr = CronExpression("0 30 2 * * *")
    with pytest.raises(AttributeError):
        expr.text = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del expr.text  # type: ignore[misc]
    assert {expr: 1}[CronExpression("0 30 2 * * *")] == 1
    assert pickle.loads(pickle.dumps(expr)) == expr
    assert copy.deepcopy(expr) == expr
    assert repr(expr) == "CronExpression('0 30 2 * * *')"
    assert str(expr) == "0 30 2 * * *"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "cron expression is empty"),
        ("   ", "cron expression is empty"),
        ("* * * *", "expected 5 or 6 fields"),
        ("* * * * * * *", "got 7"),
        ("@fortnightly", "@fortnightly is not a known macro"),
        ("@every 5m", "is an interval"),
        # one per field: out of range
        ("60 * * * * *", "second field: 60 is out of range 0-59"),
        ("0 61 * * * *", "minute field: 61 is out of range 0-59"),
        ("0 0 24 * * *", "hour field: 24 is out of range 0-23"),
        ("0 0 0 0 * *", "day-of-month field: 0 is out of range 1-31"),
        ("0 0 0 32 * *", "day-of-month field: 32 is out of range 1-31"),
        ("0 0 0 * 13 *", "month field: 13 is out of range 1-12"),
        ("0 0 0 * 0 *", "month field: 0 is out of range 1-12"),
        ("0 0 0 * * 8", "day-of-week field: 8 is out of range 0-7"),
        # in ranges and steps
        ("0 0-60 * * * *", "minute field: 60 is out of range 0-59"),
        ("0 */0 * * * *", "minute field: step 0 in */0 must be at least 1"),
        ("0 */x * * * *", "minute field: step 'x' in */x is not a whole number"),
        ("0 5/ * * * *", "minute field: step '' in 5/ is not a whole number"),
        ("0 30-10 * * * *", "minute field: 30-10 is a descending range; write 30-59,0-10"),
        ("0 0 0 * * FRI-MON", "day-of-week field: FRI-MON is a descending range; "
                              "write FRI-SAT,SUN-MON"),
        ("0 0 0 * * FRI-SUN", "day-of-week field: FRI-SUN is a descending range; "
                              "write FRI-SAT,SUN"),
        ("0 0 0 * NOV-FEB *", "month field: NOV-FEB is a descending range; write NOV-DEC,JAN-FEB"),
        ("0 0 20-10/2 * * *", "hour field: 20-10 is a descending range; a range needs A <= B"),
        ("0 1-x * * * *", "minute field: x is not a number 0-59"),
        ("0 -5 * * * *", "minute field: '-5' is missing a value"),
        ("0 1,,2 * * * *", "minute field: '1,,2' has an empty list item"),
        ("0 1, * * * *", "has an empty list item"),
        # names
        ("0 0 0 * FOO *", "month field: FOO is not a number 1-12 or a month name JAN-DEC"),
        ("0 0 0 * * MONDAY", "day-of-week field: MONDAY is not a number 0-7 or a day name"),
        ("0 MON * * * *", "minute field: MON is not a number 0-59"),
        ("0 0 0 JAN * *", "day-of-month field: JAN is not a number 1-31"),
        # special characters in the wrong place
        ("? * * * * *", "second field: ? is only allowed in day-of-month and day-of-week"),
        ("0 0 0 1,? * *", "day-of-month field: ? must be the whole field"),
        ("0 0 0 * * L", "day-of-week field: L needs a weekday before it"),
        ("0 0 0 LW * *", "day-of-month field: LW is not supported"),
        ("0 0 0 L-2 * *", "day-of-month field: L-2 is not supported"),
        ("0 0 L * * *", "hour field: L is not a number 0-23"),
        ("0 0 0 * * MON#6", "day-of-week field: 6 in MON#6 is out of range 1-5"),
        ("0 0 0 * * MON#0", "day-of-week field: 0 in MON#0 is out of range 1-5"),
        ("0 0 0 * * MON#", "day-of-week field: (nothing) in MON# is out of range 1-5"),
        ("0 0 0 * * 9#1", "day-of-week field: 9 is out of range 0-7"),
        ("0 0 0 * * 9L", "day-of-week field: 9 is out of range 0-7"),
        ("0 0 0 1# * *", "day-of-month field: 1# is not a number 1-31"),
        # days that never exist
        ("0 0 0 30 2 *", "day-of-month field: 30 never exists in FEB"),
        ("0 0 0 31 4,6 *", "day-of-month field: 31 never exists in APR,JUN"),
        ("0 0 0 30,31 FEB ?", "never exists in FEB"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(CronSyntaxError) as info:
        CronExpression(text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_error_names_the_field() -> None:
    with pytest.raises(CronSyntaxError) as info:
        CronExpression("0 61 * * * *")
    assert str(info.value) == "minute field: 61 is out of range 0-59"
    assert info.value.field == "minute"


@pytest.mark.parametrize(
    "text",
    [
        "0 0 0 29 2 *",  # leap years only, but it exists
        "0 0 0 30 2 MON",  # OR rule: Mondays in February
        "0 0 0 31 2,3 *",
        "0 0 0 L 2 *",
        "0 0 0 * 2 MON#5",
    ],
)
def test_possible_days_are_accepted(text: str) -> None:
    CronExpression(text)


def test_non_string_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        CronExpression(5)  # type: ignore[arg-type]


def test_parse_cron_caches_by_text_and_never_caches_an_error() -> None:
    from cronctl.cron import parse_cron

    first = parse_cron("0 30 8 * * MON-FRI")
    assert parse_cron("0 30 8 * * MON-FRI") is first
    assert first == CronExpression("0 30 8 * * MON-FRI")
    for _ in range(2):
        with pytest.raises(CronSyntaxError):
            parse_cron("0 61 8 * * *")


def test_expressions_sharing_day_fields_share_tables_not_answers() -> None:
    """Month tables are shared by expressions with the same day fields only."""
    monday = CronExpression("0 0 8 * * MON")
    also_monday = CronExpression("5 10 20 * * MON")
    tuesday = CronExpression("0 0 8 * * TUE")
    last = CronExpression("0 0 8 L * *")
    assert monday.matches_day(2026, 3, 9) and also_monday.matches_day(2026, 3, 9)
    assert not tuesday.matches_day(2026, 3, 9) and tuesday.matches_day(2026, 3, 10)
    assert last.matches_day(2026, 2, 28) and not last.matches_day(2026, 3, 28)
    assert monday._day_cache is also_monday._day_cache
    assert monday._day_cache is not tuesday._day_cache
