"""How the dashboard shows times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.serve.render import _local, _relative, _utc

NOW = datetime(2026, 12, 3, 7, 0, tzinfo=UTC)


def test_relative_times_use_the_two_largest_units() -> None:
    assert _relative(NOW + timedelta(hours=3, minutes=2, seconds=9), NOW) == "in 3h 2m"
    assert _relative(NOW - timedelta(minutes=5), NOW) == "5m ago"
    assert _relative(NOW + timedelta(days=2, hours=1), NOW) == "in 2d 1h"
    assert _relative(NOW + timedelta(milliseconds=300), NOW) == "just now"
    assert _relative(NOW - timedelta(seconds=1), NOW) == "just now"
    assert _relative("2026-12-03T07:00:30Z", NOW) == "in 30s"
    assert _relative(None, NOW) == ""


def test_instants_in_utc_and_local_with_their_offset() -> None:
    assert _utc("2026-12-03T06:50:00.123456Z") == "2026-12-03 06:50:00Z"
    assert _utc(None) == "–"
    assert _local("2026-03-08T03:00:00-04:00") == "2026-03-08 03:00:00 -04:00"
