"""Test helpers that ship with the library (like httpx's mock transport): a sink that
records, an ``on_done`` that can be waited on, and a request builder."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime

from cronctl.dispatch.base import DispatchRequest, Outcome
from cronctl.jobs.model import JobDefinition, Origin


class RecordingSink:
    """Keeps every line and progress call; ``wait_for(text)`` blocks until a line
    containing ``text`` arrived."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []
        self.progress_calls: list[tuple[float, float | None, str | None]] = []
        self._cond = threading.Condition()

    def log(self, level: int, message: str) -> None:
        with self._cond:
            self.lines.append((level, message))
            self._cond.notify_all()

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        with self._cond:
            self.progress_calls.append((done, total, message))
            self._cond.notify_all()

    @property
    def messages(self) -> list[str]:
        with self._cond:
            return [message for _, message in self.lines]

    def wait_for(self, text: str, timeout: float = 5.0) -> bool:
        with self._cond:
            return self._cond.wait_for(
                lambda: any(text in message for _, message in self.lines), timeout
            )


class OutcomeRecorder:
    """An ``on_done`` callback; counts calls so tests can check "exactly once"."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self._event = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)
        self._event.set()

    def wait(self, timeout: float = 10.0) -> Outcome:
        if not self._event.wait(timeout):
            raise TimeoutError(f"no outcome within {timeout}s")
        return self.outcomes[0]


_counter = 0
_counter_lock = threading.Lock()


@dataclass(frozen=True)
class _Defaults:
    scheduled_at: datetime = datetime(2026, 1, 1, tzinfo=UTC)


def request_for(
    job: JobDefinition,
    *,
    execution_id: int | None = None,
    scheduled_at: datetime | None = None,
    attempt: int = 1,
    origin: Origin = Origin.CRON,
    fencing_token: int | None = None,
    occurrence_id: str | None = None,
) -> DispatchRequest:
    """A :class:`DispatchRequest` with unique occurrence ids unless given."""
    global _counter
    with _counter_lock:
        _counter += 1
        n = _counter
    return DispatchRequest(
        job=job,
        occurrence_id=occurrence_id or f"occ-{n}",
        scheduled_at=scheduled_at or _Defaults.scheduled_at,
        attempt=attempt,
        origin=origin,
        execution_id=execution_id,
        fencing_token=fencing_token,
    )
