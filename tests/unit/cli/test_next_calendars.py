"""``cronctl next`` for a job with calendars: excluded instants are left out (not
counted), noted in their place, and long runs of them are summed up."""

from __future__ import annotations

from datetime import UTC, datetime

from cronctl.cli.cmd_next import MAX_LEFT_OUT, NextTarget, next_fires, render_plain, to_json
from cronctl.cron import Schedule

START = datetime(2026, 12, 3, 12, tzinfo=UTC)  # a Thursday


def _weekends(fire: datetime) -> str | None:
    day = fire.date()
    return f"calendar w excludes {day} (weekday)" if day.weekday() >= 5 else None


def test_excluded_fires_are_left_out_and_noted() -> None:
    target = NextTarget("j", Schedule("0 0 9 * * *", "UTC"), "UTC", excluded=_weekends)
    rows = next_fires(target, START, 3)
    fires = [r.utc.day for r in rows if r.left_out is None]
    assert fires == [4, 7, 8]  # Friday, then Monday and Tuesday
    assert [r.utc.day for r in rows if r.left_out is not None] == [5, 6]
    doc = to_json(target, START, rows)
    assert [f["utc"] for f in doc["fires"]] == ["2026-12-04T09:00:00Z",
                                                "2026-12-07T09:00:00Z",
                                                "2026-12-08T09:00:00Z"]
    assert [e["note"] for e in doc["excluded"]] == [
        "calendar w excludes 2026-12-05 (weekday)", "calendar w excludes 2026-12-06 (weekday)"]
    text = render_plain(target, START, rows)
    assert "left out: calendar w excludes 2026-12-05 (weekday)" in text


def test_a_calendar_that_excludes_everything_stops() -> None:
    target = NextTarget("j", Schedule("@every 1s"), "UTC", excluded=lambda f: "all out")
    rows = next_fires(target, START, 5)
    assert len(rows) == MAX_LEFT_OUT and all(r.left_out for r in rows)
    text = render_plain(target, START, rows)
    assert f"... {MAX_LEFT_OUT - 3} more left out: all out" in text
    assert text.count("left out: all out") == 4  # three rows and the summary line
    assert text.endswith(f"(stopped after {MAX_LEFT_OUT} instants left out by the job's "
                         "calendars)")
