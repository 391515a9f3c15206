"""Fires decided ahead of their instant are held until it, by the wall clock or, if the
wall clock was stepped back meanwhile, by the monotonic time that was left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.core import Fire
from cronctl.jobs.model import Origin
from cronctl.runtime.fire.early import EarlyFires

T = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _fire(key: int, due: datetime) -> Fire:
    return Fire(key, f"j{key}", due, due, 1, Origin.CRON, f"occ{key}", None, None)


def test_fires_not_due_are_held_until_their_instant() -> None:
    early = EarlyFires()
    now = T - timedelta(seconds=0.25)
    a, b = _fire(1, T), _fire(2, now)
    assert early.hold([a, b], now, mono=100.0) == [b]
    assert early and early.fires == [a]
    assert early.wait(now, 100.0) == 0.25
    assert early.due(T - timedelta(seconds=0.1), 100.15) == []
    assert early.due(T, 100.25) == [a] and not early


def test_a_wall_clock_stepped_back_does_not_hold_them_longer() -> None:
    early = EarlyFires()
    now = T - timedelta(seconds=0.25)
    a = _fire(1, T)
    early.hold([a], now, mono=100.0)
    back = now - timedelta(hours=1)  # the wall clock stepped back an hour
    assert 0.14 < (early.wait(back, 100.1) or 0) < 0.16
    assert early.due(back, 100.26) == [a]


def test_stopping_takes_every_held_fire() -> None:
    early = EarlyFires()
    early.hold([_fire(1, T), _fire(2, T + timedelta(seconds=1))], T - timedelta(seconds=1),
               mono=5.0)
    assert [a.key for a in early.due(None, 5.0)] == [1, 2] and not early
