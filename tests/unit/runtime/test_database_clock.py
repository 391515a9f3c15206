"""The scheduler's clock held to the database server's (runtime/clocks.py), with
injected clocks and a store that answers the server's time: no sleeping."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from cronctl.core import ClockAheadError
from cronctl.runtime.clocks import DatabaseClock

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class ServerClock:
    """The store's side: the server's clock, moving with the monotonic clock."""

    def __init__(self, clocks: Clocks | None) -> None:
        self.clocks = clocks
        self.beat_interval = None if clocks is None else 0.5  # (None: SQLite)

    def server_now(self) -> datetime | None:
        return None if self.clocks is None else T0 + timedelta(seconds=self.clocks.mono)


class Clocks:
    def __init__(self) -> None:
        self.mono = 100.0
        self.wall_offset = 0.0  # the node's wall clock minus the server's

    def wall(self) -> datetime:
        return T0 + timedelta(seconds=self.mono + self.wall_offset)


class Notes:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def notify(self, message: str) -> None:
        self.sent.append(message)

    watchdog_interval = None


def _clock(c: Clocks, *, sqlite: bool = False) -> DatabaseClock:
    return DatabaseClock(ServerClock(None if sqlite else c), local=c.wall,  # type: ignore[arg-type]
                         mono=lambda: c.mono, limit=timedelta(minutes=5))


def test_a_wall_clock_stepped_between_readings_is_held_to_the_server() -> None:
    c = Clocks()
    clock = _clock(c)
    clock.measure()
    assert clock.now() == c.wall()
    c.mono += 1.0
    c.wall_offset = 90.0  # stepped forward, the next reading not taken yet
    assert clock.now() == T0 + timedelta(seconds=c.mono)
    clock.refuse_if_ahead()  # 90 s: under the limit, decided with the server's clock
    c.wall_offset = -30.0  # behind: kept (late is safe)
    assert clock.now() == c.wall()


def test_ahead_by_more_than_the_limit_refuses_once_then_acts_again(
        caplog: pytest.LogCaptureFixture) -> None:
    c, notes = Clocks(), Notes()
    clock = _clock(c)
    clock.measure()
    c.wall_offset = 400.0
    caplog.set_level(logging.INFO, logger="cronctl.runtime")
    for _ in range(3):
        with pytest.raises(ClockAheadError) as err:
            clock.refuse_if_ahead()
        clock.refuse(err.value, notes)  # type: ignore[arg-type]
    assert clock.refusing
    c.wall_offset = 0.0
    clock.refuse_if_ahead()
    clock.acting()
    clock.acting()
    assert not clock.refusing
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [lvl for lvl, _ in lines] == ["ERROR", "INFO"], lines
    assert "ahead of the database server's" in lines[0][1]
    assert notes.sent == ["STATUS=refusing to act: clock skew"]


def test_sqlite_has_no_server_clock_and_changes_nothing() -> None:
    c = Clocks()
    clock = _clock(c, sqlite=True)
    clock.measure()
    c.wall_offset = 3600.0
    assert clock.database() is None and clock.now() == c.wall()
    clock.refuse_if_ahead()


def test_a_failed_reading_keeps_the_last_one() -> None:
    c = Clocks()
    store = ServerClock(c)
    clock = DatabaseClock(store, local=c.wall, mono=lambda: c.mono,  # type: ignore[arg-type]
                          limit=timedelta(minutes=5))
    beats: list[int] = []
    beat = clock.beating(lambda: beats.append(1))
    beat()

    def down() -> datetime:
        raise OSError("connection refused")

    store.server_now = down  # type: ignore[method-assign]
    c.mono += 2.0
    c.wall_offset = 120.0
    beat()
    assert beats == [1, 1] and clock.now() == T0 + timedelta(seconds=c.mono)


def test_the_scheduler_reads_the_wall_clock_itself_on_sqlite() -> None:
    c = Clocks()
    assert _clock(c, sqlite=True).clock == c.wall
    pg = _clock(c)
    assert pg.clock == pg.now
