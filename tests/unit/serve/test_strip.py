"""The dashboard's 24-hour strip: its window, and what colour a planned instant gets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.serve.strip import PAST_SLOTS, SLOT, SLOTS, Slot, instant_state, window
from cronctl.store.records import ExecutionRecord, SkipRecord

NOW = datetime(2026, 12, 3, 7, 41, 12, tzinfo=UTC)


def _record(at: datetime, status: ExecutionStatus) -> ExecutionRecord:
    return ExecutionRecord(id=1, job_id="j", occurrence_id="o", scheduled_at=at, attempt=1,
                           status=status, node_id="n", origin=Origin.CRON, scope_node="n",
                           fencing_token=None, target="command: true", created_at=at)


def _skips(first: datetime, last: datetime, reason: str) -> SkipRecord:
    return SkipRecord(id=1, job_id="j", reason=reason, first_at=first, last_at=last, count=2,
                      node_id="n", scope_node=None, created_at=NOW)


def test_the_window_is_48_half_hours_with_now_in_slot_36() -> None:
    first, end = window(NOW)
    assert first == datetime(2026, 12, 2, 13, 30, tzinfo=UTC)
    assert end - first == SLOTS * SLOT == timedelta(hours=24)
    assert first + PAST_SLOTS * SLOT <= NOW < first + (PAST_SLOTS + 1) * SLOT


def test_each_outcome_has_its_colour() -> None:
    t = NOW - timedelta(hours=2)
    runs = {t: _record(t, ExecutionStatus.SUCCEEDED),
            t + SLOT: _record(t + SLOT, ExecutionStatus.DEAD_LETTER),
            t + 2 * SLOT: _record(t + 2 * SLOT, ExecutionStatus.RUNNING)}
    skips = [_skips(t - 2 * SLOT, t - SLOT, "misfire"), _skips(t - 4 * SLOT, t - 3 * SLOT,
                                                               "overlap")]

    def state(at: datetime) -> str:
        return instant_state(at, NOW, runs, skips)

    assert state(t) == "ran"
    assert state(t + SLOT) == "failed"
    assert state(t + 2 * SLOT) == "pending"
    assert state(t - SLOT) == "missed"
    assert state(t - 3 * SLOT) == "skipped"
    assert state(t - 10 * SLOT) == "unknown"  # no record: no scheduler ran it
    assert state(NOW - timedelta(seconds=20)) == "pending"  # just due
    assert state(NOW + timedelta(seconds=1)) == "future"


def test_a_slot_label_counts_its_instants() -> None:
    slot = Slot(datetime(2026, 12, 3, 6, 0, tzinfo=UTC), "failed", NOW,
                (("failed", 1), ("ran", 2)))
    assert slot.label == "06:00–06:30 UTC: 1 failed, 2 ran"
    assert Slot(slot.start, "empty", None, ()).label == "06:00–06:30 UTC: nothing planned"
