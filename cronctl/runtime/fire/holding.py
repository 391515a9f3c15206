"""Fires the core admitted that do not start yet, held in one place until they may.

A fire is held for one of two reasons, and released when it passes:

- **its instant** (decided ahead: see :mod:`cronctl.runtime.fire.lookahead`): the core
  admits the first fires of a crowded instant to its slots a moment early, and a
  completion may admit more before the instant. Their :class:`Fire` carries ``due``;
  nothing starts before it. Each is also held at most as long as the monotonic clock
  said was left when it was held: a wall clock stepped back meanwhile does not keep slots
  taken for the length of the step.
- **its row** (a waiter whose ``pending`` row the writer is still inserting: see
  :mod:`cronctl.runtime.fire.waiters`): it starts once that batch has landed, so no
  handler runs before its row is committed.

Time is an argument (``now`` on the wall clock, ``mono`` on the monotonic one): the
unit tests drive it with plain numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from cronctl.core import Fire


class HeldFires:
    def __init__(self) -> None:
        self._timed: list[tuple[Fire, float]] = []  # (fire, monotonic deadline)
        self._rows: list[Fire] = []  # until the waiters' batch they are in lands

    def __bool__(self) -> bool:
        return bool(self._timed or self._rows)

    def timed(self) -> Iterator[Fire]:
        """The fires held for their instant."""
        return (a for a, _ in self._timed)

    @property
    def for_rows(self) -> int:
        """How many fires wait for their rows."""
        return len(self._rows)

    def until_due(self, fires: list[Fire], now: datetime, mono: float) -> list[Fire]:
        """Hold those of ``fires`` not due at ``now``; returns the others (in order)."""
        if all(a.due <= now for a in fires):
            return fires
        self._timed.extend((a, mono + (a.due - now).total_seconds())
                           for a in fires if a.due > now)
        return [a for a in fires if a.due <= now]

    def until_row(self, fire: Fire) -> None:
        """Hold ``fire`` until the batch its row is in lands (:meth:`landed`)."""
        self._rows.append(fire)

    def due(self, now: datetime | None, mono: float) -> list[Fire]:
        """Take the fires whose instant came at (``now``, ``mono``) (every one: ``now``
        None, as when stopping)."""
        if not self._timed:
            return []
        if now is None:
            every, self._timed = self._timed, []
            return [a for a, _ in every]
        taken = [a for a, at in self._timed if a.due <= now or at <= mono]
        if taken:
            self._timed = [(a, at) for a, at in self._timed
                           if not (a.due <= now or at <= mono)]
        return taken

    def landed(self) -> list[Fire]:
        """A batch of rows landed: take the fires held for their rows (in order; one whose
        row is still in flight is held again by the fire path)."""
        rows, self._rows = self._rows, []
        return rows

    def wait(self, now: datetime, mono: float) -> float | None:
        """Seconds until the first fire held for its instant is due."""
        if not self._timed:
            return None
        return min(min((a.due - now).total_seconds(), at - mono) for a, at in self._timed)
