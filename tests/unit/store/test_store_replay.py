"""Replay planning (:mod:`cronctl.store.replay`) without a database: which planned
instants are queued, which are already handled, and what ``--max`` and the scan limit
leave out. (Against real databases and the CLI: tests/integration/test_pause_status_replay.py.)"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from cronctl.cli import cmd_replay
from cronctl.cron import Schedule
from cronctl.ids import occurrence_id
from cronctl.store import replay
from cronctl.store.replay import EXECUTED, REQUESTED, Occurrence, handled_in, plan

T0 = datetime(2026, 3, 8, 0, 0, tzinfo=UTC)
HOURLY = Schedule("0 0 * * * *", "UTC")


def _nothing(chunk: Sequence[datetime]) -> dict[datetime, str]:
    return {}


def test_the_window_is_open_at_since_and_closed_at_until() -> None:
    result = plan("j", HOURLY, T0, T0 + timedelta(hours=3), 100, _nothing)
    assert [o.scheduled_at for o in result.queue] == [T0 + timedelta(hours=h)
                                                      for h in (1, 2, 3)]
    assert result.queue[0] == Occurrence(T0 + timedelta(hours=1),
                                         occurrence_id("j", T0 + timedelta(hours=1)))
    assert (result.handled, result.left_out, result.scan_truncated) == ([], 0, False)


def test_handled_instants_are_reported_and_max_counts_only_the_rest() -> None:
    done = {T0 + timedelta(hours=2): EXECUTED, T0 + timedelta(hours=3): REQUESTED}
    result = plan("j", HOURLY, T0, T0 + timedelta(hours=6), 2,
                  lambda chunk: {at: why for at, why in done.items() if at in chunk})
    assert [o.scheduled_at.hour for o in result.queue] == [1, 4]
    assert [(o.scheduled_at.hour, o.handled) for o in result.handled] == [
        (2, EXECUTED), (3, REQUESTED)]
    assert result.left_out == 2


def test_the_scan_stops_at_its_limit_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay, "SCAN_LIMIT", 5)
    monkeypatch.setattr(replay, "CHUNK", 2)
    chunks: list[int] = []

    def lookup(chunk: Sequence[datetime]) -> dict[datetime, str]:
        chunks.append(len(chunk))
        return {}

    result = plan("j", HOURLY, T0, T0 + timedelta(hours=10), 3, lookup)
    assert chunks == [2, 2, 1]
    assert (len(result.queue), result.left_out, result.scan_truncated) == (3, 2, True)
    exact = plan("j", HOURLY, T0, T0 + timedelta(hours=5), 3, _nothing)
    assert (exact.left_out, exact.scan_truncated) == (2, False)


def test_no_database_yet_means_nothing_is_handled() -> None:
    assert handled_in(None, "j")([T0]) == {}


def test_the_command_bounds_max_by_the_library_s_scan_limit() -> None:
    assert cmd_replay.SCAN_LIMIT == replay.SCAN_LIMIT
