"""Integer and time arguments of the CLI: bounded, and one UsageError line when not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronctl.argtypes import (
    BIGINT_MAX,
    SIGNED,
    count,
    execution_id,
    parse_int,
    parse_time,
)
from cronctl.errors import UsageError

NOW = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)


def test_integers() -> None:
    assert parse_int(" 42 ", what="-n", minimum=1, maximum=100) == 42
    assert execution_id()(str(BIGINT_MAX)) == BIGINT_MAX
    assert count("--limit")(20) == 20  # a default passes through
    for text, message in [("0", "out of range"), ("101", "out of range"),
                          ("1" * 500, "out of range"), ("4x", "not a whole number"),
                          ("", "not a whole number"), ("1.5", "not a whole number")]:
        with pytest.raises(UsageError, match=f"^-n: .*{message}"):
            parse_int(text, what="-n", minimum=1, maximum=100)
    with pytest.raises(UsageError, match="EXECUTION_ID"):
        execution_id()(str(BIGINT_MAX + 1))


def test_times() -> None:
    assert parse_time("now", NOW, what="--since") == NOW
    assert parse_time("3d", NOW, what="--since") == NOW - timedelta(days=3)
    # issue 24: "-5m" is how some write "5 minutes ago"; both read the same
    assert parse_time("-5m", NOW, what="--since") == NOW - timedelta(minutes=5)
    assert parse_time("2h", NOW, what="--from", relative=SIGNED) == NOW + timedelta(hours=2)
    assert parse_time("-2h", NOW, what="--from", relative=SIGNED) == NOW - timedelta(hours=2)
    assert parse_time("2026-03-08T01:00", NOW, what="--from",
                      zone=ZoneInfo("America/New_York")) == datetime(2026, 3, 8, 6, tzinfo=UTC)
    assert parse_time("2026-03-08", NOW, what="--since") == datetime(2026, 3, 8, tzinfo=UTC)
    assert parse_time("0001-01-01", NOW, what="--since") == datetime(1, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("text, message", [
    ("36526d", "longer than 100 years"),
    ("0001-01-01T00:00+01:00", "out of range"),
    ("9999-12-31T23:00-01:00", "out of range"),
    ("9000-01-01", "too far in the future"),
    ("yesterday", "neither an ISO 8601 time"),
    ("x" * 1000, "neither an ISO 8601 time"),
])
def test_bad_times(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=f"^--since: .*{message}") as info:
        parse_time(text, NOW, what="--since")
    assert len(str(info.value)) < 200


def test_a_local_time_in_a_dst_gap_names_no_instant() -> None:
    # America/New_York, 2026-03-08: 02:00 EST -> 03:00 EDT. next --from refuses it with
    # what to do; why (gap_ok) reads it as Python does, to explain "DST gap skipped".
    zone = ZoneInfo("America/New_York")
    with pytest.raises(UsageError, match=r"^--from: 2026-03-08 02:30:00 does not exist in "
                                         r"America/New_York: .*DST gap.*UTC offset") as info:
        parse_time("2026-03-08T02:30", NOW, what="--from", relative=SIGNED, zone=zone)
    assert len(str(info.value).splitlines()) == 1
    assert parse_time("2026-03-08T02:30", NOW, what="AT", zone=zone,
                      gap_ok=True) == datetime(2026, 3, 8, 7, 30, tzinfo=UTC)
    # An offset makes it an instant; the repeated 01:30 of 11-01 is one too (its first pass).
    assert parse_time("2026-03-08T02:30-05:00", NOW, what="--from", zone=zone) == datetime(
        2026, 3, 8, 7, 30, tzinfo=UTC)
    assert parse_time("2026-11-01T01:30", NOW, what="--from", zone=zone) == datetime(
        2026, 11, 1, 5, 30, tzinfo=UTC)
