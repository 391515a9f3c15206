"""Deciding a crowded instant a moment before it comes.

When more planned fires are due at the next instant than there are slots, the scheduler
thread decides them :data:`AHEAD` seconds early, more for a larger burst
(``SchedulerCore.tick_ahead``): the fires the core admits at once are held until the
instant (:mod:`cronctl.runtime.fire.holding`), the ones that wait for a slot are staged for the
relay (:mod:`cronctl.runtime.fire.relaying`, not taken before the instant). At the instant
only the hand-off is left: the decisions and the handlers' contexts of a 1,000-job
second cost the scheduler thread ~20 ms, which every fire's start used to wait behind.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from cronctl.core import Decision, SchedulerCore
from cronctl.runtime.fire.holding import HeldFires
from cronctl.runtime.fire.relaying import RelayedFires

AHEAD = 0.25  # seconds before a crowded instant its fires are decided (and staged) ...
PER_FIRE = 60e-6  # ... or more: this much per fire due (deciding and staging 25-40 us here)
MOST_AHEAD = 2.0


class Lookahead:
    """When a crowded instant is decided, and deciding it."""

    def __init__(self, core: SchedulerCore, *, held: HeldFires, relayed: RelayedFires,
                 execute: Callable[[Decision], None], slots: int, slice_: int) -> None:
        self.core = core
        self.held = held
        self.relayed = relayed
        self.execute = execute
        self.slots = slots
        self.slice = slice_
        self._asked: datetime | None = None  # the instant ``_crowded`` was asked for
        self._lead = 0.0  # how long before ``_asked`` its fires are decided (0: not crowded)

    def next_crowded(self, now: datetime) -> datetime | None:
        """The next planned instant if more fires are due at it than slots (a burst the
        relay can start), else None; the core is asked once per instant."""
        if not self.relayed.enabled:
            return None
        at = self.core.next_planned()
        if at is None or at <= now:
            return None
        if at != self._asked:
            self._asked = at
            due = self.core.crowded(at, self.slots)
            self._lead = min(max(AHEAD, due * PER_FIRE), MOST_AHEAD) if due else 0.0
        return at if self._lead else None

    def wake_in(self, now: datetime, mono: float) -> float | None:
        """Seconds to the next thing to do: an entry due, a held fire's instant, or the
        moment a crowded instant is decided."""
        wake = self.core.wake_in(now, mono)
        early = self.held.wait(now, mono)
        if early is not None:
            wake = early if wake is None else min(wake, early)
        at = self.next_crowded(now)
        if at is not None and wake is not None:
            wake = min(wake, max((at - now).total_seconds() - self._lead, 0.0))
        return wake

    def decide(self, now: datetime, mono: float) -> None:
        """Within AHEAD of a crowded instant: decide (a slice of) its planned fires."""
        at = self.next_crowded(now)
        if at is None:
            return
        lead = (at - now).total_seconds()
        if lead > self._lead:
            return
        decision = self.core.tick_ahead(at, mono=mono + lead, budget=self.slice)
        relayed = self.relayed
        relayed.not_before = at
        try:
            self.execute(decision)
        finally:
            relayed.not_before = None
