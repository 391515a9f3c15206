"""``JobContext``: what a Python handler receives about the execution it runs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

ProgressFn = Callable[[float, float | None, str | None], None]


def _no_progress(done: float, total: float | None, message: str | None) -> None:
    return None


def _always_owner() -> bool:
    return True


@dataclass(frozen=True)
class JobContext:
    """Handed to handlers that take one argument.

    ``log`` is a :class:`logging.Logger` whose records go to this execution's job log;
    ``progress(done, total=None, message=None)`` records progress (buffered, flushed every
    ``progress_flush_interval``); ``is_cancelled()`` turns true once someone ran
    ``cronctl cancel`` on this execution, or the scheduler is shutting down past its grace.
    ``still_owner()`` asks the store whether this attempt is still the one that counts
    (its row still ``running`` here with its fencing token): call it right before an
    external side effect; False means another node took the attempt over
    (docs/behaviour.md#durability-and-clusters: a frozen scheduler's handlers are at-least-once). It
    raises when the store cannot be reached (the attempt then fails and is retried, rather than
    acting unsure). Untracked attempts are always their own owner.
    """

    job_id: str
    execution_id: int | None
    occurrence_id: str
    scheduled_at: datetime
    attempt: int
    origin: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    payload: Any = None
    fencing_token: int | None = None
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("cronctl.job"))
    _cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)
    _progress: ProgressFn = field(default=_no_progress, repr=False)
    _owner: Callable[[], bool] = field(default=_always_owner, repr=False)

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self._progress(done, total, message)

    def is_cancelled(self) -> bool:
        return self._cancel_event.is_set()

    def still_owner(self) -> bool:
        return self._owner()
