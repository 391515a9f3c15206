"""The clock a scheduler decides with: its wall clock, held to the database server's.

On PostgreSQL the server's clock is read with every heartbeat (on the liveness thread,
no round trip per fire) and carried forward on the monotonic clock between readings, so
a wall clock stepped forward between two heartbeats is caught at the next tick, not at
the next reading. On SQLite the database's clock is this host's own: nothing to compare.
The decisions are :mod:`cronctl.core.clocks`'; this module measures and says so in the
log (one ERROR when the node starts refusing, one INFO when it acts again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from cronctl.core import (
    ClockAheadError,
    ClockSkewError,
    deciding_now,
    refuse_if_ahead,
    server_at,
)
from cronctl.errors import first_line
from cronctl.runtime.systemd import Notifier
from cronctl.store.base import Store

log = logging.getLogger("cronctl.runtime")


class DatabaseClock:
    """The scheduler's ``clock``: :meth:`now` is the wall clock, or the database server's
    when the wall clock is ahead of it. Read from any thread; a reading is replaced whole
    (one tuple), so a reader never sees half of one."""

    def __init__(self, store: Store, *, local: Callable[[], datetime],
                 mono: Callable[[], float], limit: timedelta) -> None:
        self.store = store
        self.local = local
        self.mono = mono
        self.limit = limit
        self._reading: tuple[datetime, float, float] | None = None  # server, sent, received
        self.refusing = False

    def measure(self) -> None:
        """Read the server's clock (one round trip on PostgreSQL; nothing on SQLite)."""
        sent = self.mono()
        server = self.store.server_now()
        if server is not None:
            self._reading = (server, sent, self.mono())

    def database(self) -> datetime | None:
        """The server's clock now, carried from the last reading; None on SQLite."""
        reading = self._reading
        return None if reading is None else server_at(*reading, self.mono())

    def now(self) -> datetime:
        return deciding_now(self.local(), self.database())

    @property
    def clock(self) -> Callable[[], datetime]:
        """What the scheduler reads as "now": :meth:`now`, or on SQLite (no server clock
        to hold it to) the wall clock itself, without the indirection on every read."""
        return self.local if self.store.beat_interval is None else self.now

    def refuse_if_ahead(self) -> None:
        """:class:`ClockAheadError` while the wall clock is ahead by more than the limit."""
        refuse_if_ahead(self.local(), self.database(), self.limit)

    def beating(self, heartbeat: Callable[[], None]) -> Callable[[], None]:
        """``heartbeat``, then a reading of the server's clock. A failed reading keeps the
        previous one (carried on the monotonic clock); the heartbeat says the store is
        away."""
        if self.store.beat_interval is None:
            return heartbeat

        def beat() -> None:
            heartbeat()
            try:
                self.measure()
            except Exception as exc:
                log.debug("could not read the database server's clock: %s", first_line(exc))

        return beat

    def refuse(self, exc: ClockSkewError | ClockAheadError, notifier: Notifier) -> None:
        """The tick did not act because of ``exc``: said once, until the node acts again."""
        if not self.refusing:
            self.refusing = True
            log.error("refusing to act: %s", exc)
            notifier.notify("STATUS=refusing to act: clock skew")

    def acting(self) -> None:
        if self.refusing:
            self.refusing = False
            log.info("clock is consistent again; acting")


__all__ = ["DatabaseClock"]
