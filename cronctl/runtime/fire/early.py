"""Fires admitted ahead of their instant, held until it comes.

The scheduler decides a crowded instant's planned fires a moment before it (see
:mod:`cronctl.runtime.fire.lookahead`): the core admits the first of them to its slots at
once, and a completion may admit more before the instant. Their :class:`Fire` carries
``due``; nothing starts before it. Each is also held at most as long as the monotonic
clock says was left when it was held: a wall clock stepped back meanwhile does not keep
slots taken for the length of the step.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from cronctl.core import Fire


class EarlyFires:
    def __init__(self) -> None:
        self._held: list[tuple[Fire, float]] = []  # (fire, monotonic deadline)

    def __bool__(self) -> bool:
        return bool(self._held)

    def __iter__(self) -> Iterator[Fire]:
        return (a for a, _ in self._held)

    @property
    def fires(self) -> list[Fire]:
        return list(self)

    def hold(self, fires: list[Fire], now: datetime, mono: float) -> list[Fire]:
        """Keep those of ``fires`` not due at ``now``; returns the others."""
        if all(a.due <= now for a in fires):
            return fires
        self._held.extend((a, mono + (a.due - now).total_seconds())
                          for a in fires if a.due > now)
        return [a for a in fires if a.due <= now]

    def due(self, now: datetime | None, mono: float) -> list[Fire]:
        """Take the fires due at (``now``, ``mono``) (every one: ``now`` None)."""
        if not self._held:
            return []
        if now is None:
            every, self._held = self._held, []
            return [a for a, _ in every]
        taken = [a for a, at in self._held if a.due <= now or at <= mono]
        if taken:
            self._held = [(a, at) for a, at in self._held if not (a.due <= now or at <= mono)]
        return taken

    def wait(self, now: datetime, mono: float) -> float | None:
        """Seconds until the first held fire is due."""
        if not self._held:
            return None
        return min(min((a.due - now).total_seconds(), at - mono) for a, at in self._held)
