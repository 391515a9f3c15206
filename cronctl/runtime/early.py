"""Fires admitted ahead of their instant, held until it comes.

The scheduler decides a crowded instant's planned fires a moment before it (see
``Scheduler._ahead``): the core admits the first of them to its slots at once, and a
completion may admit more before the instant. Their :class:`Fire` carries ``due``;
nothing starts before it.
"""

from __future__ import annotations

from datetime import datetime

from cronctl.core import Fire


class EarlyFires:
    def __init__(self) -> None:
        self.fires: list[Fire] = []

    def __bool__(self) -> bool:
        return bool(self.fires)

    def hold(self, fires: list[Fire], now: datetime) -> list[Fire]:
        """Keep those of ``fires`` not due at ``now``; returns the others."""
        if all(a.due <= now for a in fires):
            return fires
        self.fires.extend(a for a in fires if a.due > now)
        return [a for a in fires if a.due <= now]

    def due(self, now: datetime | None) -> list[Fire]:
        """Take the fires due at ``now`` (every one: ``None``)."""
        if not self.fires:
            return []
        if now is None:
            taken, self.fires = self.fires, []
            return taken
        taken = [a for a in self.fires if a.due <= now]
        if taken:
            self.fires = [a for a in self.fires if a.due > now]
        return taken

    def wait(self, now: datetime) -> float | None:
        """Seconds until the first held fire is due."""
        if not self.fires:
            return None
        return (min(a.due for a in self.fires) - now).total_seconds()
