"""English readings of the common shapes, and that equal sets read the same."""

from __future__ import annotations

import pytest

from cronctl.cron import CronExpression


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("0 8 * * MON-FRI", "At 08:00:00, Monday through Friday"),
        ("0 30 2 * * *", "At 02:30:00, every day"),
        ("*/15 * * * *", "Every 15 minutes"),
        ("* * * * *", "Every minute"),
        ("* * * * * *", "Every second"),
        ("*/10 * * * * *", "Every 10 seconds"),
        ("@hourly", "Every hour"),
        ("0 0 */2 * * *", "Every 2 hours"),
        ("30 * * * *", "At minute 30 of every hour"),
        ("15 * * * * *", "At second 15 of every minute"),
        ("0 9,17 * * *", "At 09:00:00 and 17:00:00, every day"),
        ("@daily", "At 00:00:00, every day"),
        ("@weekly", "At 00:00:00, on Sunday"),
        ("@monthly", "At 00:00:00, on day 1 of the month"),
        ("@yearly", "At 00:00:00, on day 1 of the month, in January"),
        ("0 0 L * *", "At 00:00:00, on the last day of the month"),
        ("0 0 1,15 * *", "At 00:00:00, on days 1 and 15 of the month"),
        ("0 0 */2 * *", "At 00:00:00, on every 2nd day of the month"),
        ("0 0 * * FRI#3", "At 00:00:00, on the third Friday of the month"),
        ("0 0 * * 5L", "At 00:00:00, on the last Friday of the month"),
        ("0 0 * * SAT,SUN", "At 00:00:00, on Saturday and Sunday"),
        ("0 0 * * 1,3,5", "At 00:00:00, on Monday, Wednesday and Friday"),
        ("0 0 1 * MON", "At 00:00:00, on day 1 of the month or on Monday"),
        ("0 0 1 JAN-MAR *", "At 00:00:00, on day 1 of the month, January through March"),
        ("0 12 * 6,12 *", "At 12:00:00, every day, in June and December"),
        ("*/5 9-17 * * MON-FRI",
         "Every 5 minutes, between 09:00 and 17:55, Monday through Friday"),
        ("0 0 1-5,10 * * *", "At minute 0 of hours 01 through 05 and 10"),
    ],
)
def test_common_shapes(text: str, english: str) -> None:
    assert CronExpression(text).explain() == english


def test_equal_sets_read_the_same() -> None:
    assert CronExpression("0 0,15,30,45 * * * *").explain() == "Every 15 minutes"
    assert CronExpression("0 0 * * 1-5").explain() == CronExpression("0 0 * * MON-FRI").explain()


@pytest.mark.parametrize(
    "text",
    ["1,2,3,7 5-9 */7 2-30/3 JAN,MAR * ", "7 * 4 * * *", "* 0 * * * *",
     "0 0 0 L,15 * 5L,MON#2", "30 0/7 1-3 * * *", "0 7 1/5 * * *"],
)
def test_unusual_shapes_still_read(text: str) -> None:
    english = CronExpression(text).explain()
    assert english and english[0].isupper() and "  " not in english


def test_explain_reads_the_fields_not_the_expression() -> None:
    """``cronctl.cron.explain`` needs only the parsed sets (no CronExpression)."""
    from dataclasses import dataclass

    from cronctl.cron.explain import explain

    @dataclass(frozen=True)
    class Fields:
        seconds: frozenset[int] = frozenset({0})
        minutes: frozenset[int] = frozenset({0})
        hours: frozenset[int] = frozenset({8})
        days: frozenset[int] = frozenset(range(1, 32))
        months: frozenset[int] = frozenset(range(1, 13))
        weekdays: frozenset[int] = frozenset(range(1, 6))
        last_day: bool = False
        nth_weekdays: frozenset[tuple[int, int]] = frozenset()
        last_weekdays: frozenset[int] = frozenset()
        dom_restricted: bool = False
        dow_restricted: bool = True

    assert explain(Fields()) == CronExpression("0 8 * * MON-FRI").explain()
    assert explain(CronExpression("0 8 * * MON-FRI")) == "At 08:00:00, Monday through Friday"
