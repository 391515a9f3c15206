"""The threadless scheduler core (no clock, no I/O, no threads); ``runtime`` drives it.

Its names load on first use (:mod:`cronctl.lazy`): the read commands import one pure
helper (``core.calendars``, ``core.why``) without building the scheduler's classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cronctl import lazy

if TYPE_CHECKING:
    from cronctl.core.actions import (
        Abandon,
        Action,
        AdvanceCursor,
        CloseInterrupted,
        DeadLetter,
        Decision,
        Enqueue,
        ExecKey,
        Finish,
        Fire,
        JobState,
        Missed,
        RecoveredExecution,
        Retry,
        Skip,
        SkipReason,
        WaitReason,
    )
    from cronctl.core.clocks import (
        ClockAheadError,
        ClockVerdict,
        cap_cursors,
        deciding_now,
        judge,
        refuse_if_ahead,
        server_at,
    )
    from cronctl.core.engine import SchedulerCore
    from cronctl.core.errors import ClockSkewError, refuse_on_skew
    from cronctl.core.timing import jitter_offset, needs_store, retry_delay, schedule_for

__all__ = [
    "Abandon",
    "Action",
    "AdvanceCursor",
    "ClockAheadError",
    "ClockSkewError",
    "ClockVerdict",
    "CloseInterrupted",
    "DeadLetter",
    "Decision",
    "Enqueue",
    "ExecKey",
    "Finish",
    "Fire",
    "JobState",
    "Missed",
    "RecoveredExecution",
    "Retry",
    "SchedulerCore",
    "Skip",
    "SkipReason",
    "WaitReason",
    "cap_cursors",
    "deciding_now",
    "jitter_offset",
    "judge",
    "needs_store",
    "refuse_if_ahead",
    "refuse_on_skew",
    "retry_delay",
    "schedule_for",
    "server_at",
]

_HOMES = {
    "Abandon": ".actions",
    "Action": ".actions",
    "AdvanceCursor": ".actions",
    "ClockAheadError": ".clocks",
    "ClockSkewError": ".errors",
    "ClockVerdict": ".clocks",
    "CloseInterrupted": ".actions",
    "DeadLetter": ".actions",
    "Decision": ".actions",
    "Enqueue": ".actions",
    "ExecKey": ".actions",
    "Finish": ".actions",
    "Fire": ".actions",
    "JobState": ".actions",
    "Missed": ".actions",
    "RecoveredExecution": ".actions",
    "Retry": ".actions",
    "SchedulerCore": ".engine",
    "Skip": ".actions",
    "SkipReason": ".actions",
    "WaitReason": ".actions",
    "cap_cursors": ".clocks",
    "deciding_now": ".clocks",
    "jitter_offset": ".timing",
    "judge": ".clocks",
    "needs_store": ".timing",
    "refuse_if_ahead": ".clocks",
    "refuse_on_skew": ".errors",
    "retry_delay": ".timing",
    "schedule_for": ".timing",
    "server_at": ".clocks",
}

__getattr__, __dir__ = lazy.exports(__name__, _HOMES, __all__)
