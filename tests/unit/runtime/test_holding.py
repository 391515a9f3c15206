"""Fires the core admitted are held in one place until they may start: until their instant
(by the wall clock or, if it was stepped back meanwhile, by the monotonic time that was
left), or until the batch their row is in lands. Time is passed in: no sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.core import Fire
from cronctl.jobs.model import Origin
from cronctl.runtime.fire.holding import HeldFires

T = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _fire(key: int, due: datetime) -> Fire:
    return Fire(key, f"j{key}", due, due, 1, Origin.CRON, f"occ{key}", None, None)


def test_fires_not_due_are_held_until_their_instant() -> None:
    held = HeldFires()
    now = T - timedelta(seconds=0.25)
    a, b = _fire(1, T), _fire(2, now)
    assert held.until_due([a, b], now, mono=100.0) == [b]
    assert held and list(held.timed()) == [a] and held.for_rows == 0
    assert held.wait(now, 100.0) == 0.25
    assert held.due(T - timedelta(seconds=0.1), 100.15) == []
    assert held.due(T, 100.25) == [a] and not held


def test_fires_all_due_are_not_held_and_keep_their_order() -> None:
    held = HeldFires()
    fires = [_fire(3, T), _fire(1, T - timedelta(seconds=1)), _fire(2, T)]
    assert held.until_due(fires, T, mono=0.0) == fires and not held
    assert held.wait(T, 0.0) is None


def test_a_wall_clock_stepped_back_does_not_hold_them_longer() -> None:
    held = HeldFires()
    now = T - timedelta(seconds=0.25)
    a = _fire(1, T)
    held.until_due([a], now, mono=100.0)
    back = now - timedelta(hours=1)  # the wall clock stepped back an hour
    assert 0.14 < (held.wait(back, 100.1) or 0) < 0.16
    assert held.due(back, 100.2) == []
    assert held.due(back, 100.26) == [a]


def test_stopping_takes_every_fire_held_for_its_instant() -> None:
    held = HeldFires()
    held.until_due([_fire(1, T), _fire(2, T + timedelta(seconds=1))], T - timedelta(seconds=1),
                   mono=5.0)
    assert [a.key for a in held.due(None, 5.0)] == [1, 2] and not held


def test_fires_held_for_their_rows_go_when_the_batch_lands_in_order() -> None:
    held = HeldFires()
    a, b = _fire(1, T), _fire(2, T)
    held.until_row(a)
    held.until_row(b)
    assert held and held.for_rows == 2
    assert held.due(T + timedelta(hours=1), 1e9) == []  # time does not release them
    assert held.wait(T, 0.0) is None
    assert held.landed() == [a, b] and not held
    assert held.landed() == []


def test_both_kinds_are_held_side_by_side() -> None:
    held = HeldFires()
    early, waiter = _fire(1, T), _fire(2, T - timedelta(seconds=1))
    held.until_due([early], T - timedelta(seconds=0.5), mono=10.0)
    held.until_row(waiter)
    assert list(held.timed()) == [early] and held.for_rows == 1
    assert held.landed() == [waiter] and held  # the early one is still held
    assert held.due(T, 10.5) == [early] and not held
