"""The dashboard's 24-hour strip: its window, and the colour of a slot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.serve.strip import PAST_SLOTS, SLOT, SLOTS, Slot, slot_state, window

NOW = datetime(2026, 12, 3, 7, 41, 12, tzinfo=UTC)


def test_the_window_is_48_half_hours_with_now_in_slot_36() -> None:
    first, end = window(NOW)
    assert first == datetime(2026, 12, 2, 13, 30, tzinfo=UTC)
    assert end - first == SLOTS * SLOT == timedelta(hours=24)
    assert first + PAST_SLOTS * SLOT <= NOW < first + (PAST_SLOTS + 1) * SLOT


def test_the_most_pressing_outcome_colours_a_slot() -> None:
    past = NOW - timedelta(hours=2)

    def state(counts: dict[str, int], reasons: set[str] = frozenset(),  # type: ignore[assignment]
              planned: datetime | None = past, start: datetime = past) -> str:
        return slot_state(counts, set(reasons), planned, start, NOW)

    assert state({"succeeded": 3}) == "ran"
    assert state({"succeeded": 2, "failed": 1}) == "failed"
    assert state({"succeeded": 2, "dead_letter": 1}, {"misfire"}) == "failed"
    assert state({"cancelled": 1}) == "failed"
    assert state({"succeeded": 2}, {"misfire"}) == "missed"
    assert state({"succeeded": 2}, {"overlap"}) == "skipped"
    assert state({"succeeded": 2, "running": 1}) == "pending"
    assert state({}) == "unknown"  # planned, past, no record: no scheduler ran it
    assert state({}, planned=None) == "empty"
    assert state({}, planned=NOW + timedelta(minutes=5), start=NOW - timedelta(minutes=11)
                 ) == "future"
    assert state({}, planned=NOW - timedelta(seconds=20)) == "pending"  # just due
    assert state({"succeeded": 1}, planned=None) == "ran"  # a manual run in an empty slot


def test_a_slot_label_counts_what_it_holds() -> None:
    start = datetime(2026, 12, 3, 6, 0, tzinfo=UTC)
    slot = Slot(start, "failed", NOW, (("succeeded", 2), ("failed", 1)))
    assert slot.label == "06:00–06:30 UTC: 2 succeeded, 1 failed"
    assert Slot(start, "empty", None).label == "06:00–06:30 UTC: nothing planned"
    assert Slot(start, "unknown", start).label == "06:00–06:30 UTC: planned, no record"


def test_before_a_scheduler_had_the_job_a_slot_is_unplanned_and_late_has_its_colour() -> None:
    """Issue 39: a fresh install's strip hatched 36 slots "planned, no record" while `why`
    said not_planned (not_yet_scheduled); a late instant looked like any other."""
    past = NOW - timedelta(hours=2)
    assert slot_state({}, set(), past, past, NOW, before=True) == "unplanned"
    assert slot_state({"succeeded": 1}, set(), past, past, NOW, before=True) == "ran"
    assert slot_state({}, set(), past, past, NOW, late_at=past + timedelta(minutes=5)
                      ) == "late"
    assert slot_state({}, set(), past, past, NOW, late_at=NOW + timedelta(minutes=5)
                      ) == "unknown"
    assert "no scheduler had the job" in Slot(past, "unplanned", past).label
