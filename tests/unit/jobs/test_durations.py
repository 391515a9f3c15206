"""The one duration parser bounds every duration to 100 years (SPEC section 5)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronctl.durations import MAX_DURATION, DurationError, parse_duration


def test_exactly_100_years_is_accepted() -> None:
    assert timedelta(days=36525) == MAX_DURATION
    assert parse_duration("36525d") == MAX_DURATION
    assert parse_duration(36525 * 86400) == MAX_DURATION
    assert parse_duration("5217w6d") == MAX_DURATION


@pytest.mark.parametrize("value", [
    "36525d1s", "99999999999d", "1000000000d", "1" * 400, 36525 * 86400 + 1,
    99999999999999, 10**400, float("inf"), 1e300, timedelta(days=36526),
])
def test_longer_is_one_clear_error(value: object) -> None:
    with pytest.raises(DurationError, match="longer than 100 years") as info:
        parse_duration(value)
    assert len(str(info.value)) < 120  # a 400-digit number is shortened


@pytest.mark.parametrize("value, message", [
    (float("nan"), "not a duration"), (-10**400, "negative"), (float("-inf"), "negative"),
])
def test_other_non_durations(value: object, message: str) -> None:
    with pytest.raises(DurationError, match=message):
        parse_duration(value)
