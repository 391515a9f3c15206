"""The threadless scheduler core (no clock, no I/O, no threads); ``runtime`` drives it."""

from __future__ import annotations

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
from cronctl.core.guards import needs_store
from cronctl.core.timing import jitter_offset, retry_delay, schedule_for

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
