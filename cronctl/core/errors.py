"""Errors the core raises before it changes anything."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Protocol

from cronctl.errors import CronctlError


class ClockSkewError(CronctlError):
    """The wall clock is behind a persisted cursor by more than ``clock_skew_limit``.

    Acting now would treat instants already handled (by this node before a clock jump, or
    by another node with a correct clock) as new, so the scheduler refuses to act."""

    def __init__(self, job_id: str, cursor: datetime, now: datetime, limit: timedelta) -> None:
        behind = cursor - now
        super().__init__(
            f"clock skew: the system clock ({now.isoformat()}) is {behind} behind job "
            f"{job_id!r}'s persisted cursor ({cursor.isoformat()}), more than "
            f"clock_skew_limit ({limit}); fix the clock (NTP) or raise clock_skew_limit"
        )
        self.job_id = job_id
        self.cursor = cursor
        self.now = now
        self.limit = limit


class SkewState(Protocol):
    @property
    def cursor(self) -> datetime | None: ...


def refuse_on_skew(states: Mapping[str, SkewState], now: datetime, limit: timedelta) -> None:
    """:class:`ClockSkewError` when ``now`` is behind a persisted cursor by more than
    ``limit`` (docs/behaviour.md#clocks). The runtime calls it before it writes anything
    at start, :meth:`SchedulerCore.start` again before it acts."""
    for job_id in sorted(states):
        cursor = states[job_id].cursor
        if cursor is not None and cursor - now > limit:
            raise ClockSkewError(job_id, cursor, now, limit)
