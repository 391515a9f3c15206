"""What a process-isolated Python attempt (:mod:`cronctl.dispatch.worker`) tells the
scheduler through its output, besides what the handler prints: each ``ctx.log`` record
with its level, and the last line of the exception it failed with.

Both are lines that start with :data:`MARK` (a control character no handler's ordinary
output starts with). The worker writes them with :func:`record_line` and
:func:`error_line`; :class:`WorkerSink` reads them on the scheduler's side: a record
becomes a job log line at its own level (the log read ``INFO    INFO about to fail``:
the worker's ``LEVEL message`` text logged at the stream's level), and the error
becomes the attempt's error (it was ``exit code 1``, the ERROR column told nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cronctl.dispatch.base import LogSink, Outcome

MARK = "\x1f"
_ERROR = "error"
_LEVELS = {name: getattr(logging, name)
           for name in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")}


def record_line(level: int, message: str) -> str:
    """A ``ctx.log`` record as one marked line (continuation lines unmarked)."""
    return f"{MARK}{logging.getLevelName(level)} {message}"


def error_line(text: str) -> str:
    """The attempt's error, as the worker's last line (one line)."""
    return f"{MARK}{_ERROR} {' '.join(text.split())}"


class WorkerSink:
    """The job log of a worker: marked records at their own level, the marked error kept
    for :meth:`outcome` instead of logged, everything else as it came."""

    def __init__(self, inner: LogSink) -> None:
        self._inner = inner
        self.error: str | None = None

    def log(self, level: int, message: str) -> None:
        if message.startswith(MARK):
            kind, _, text = message[1:].partition(" ")
            if kind == _ERROR:
                self.error = text
                return
            if kind in _LEVELS:
                level, message = _LEVELS[kind], text
        self._inner.log(level, message)

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        self._inner.progress(done, total, message)

    def done(self, on_done: Callable[[Outcome], None]) -> Callable[[Outcome], None]:
        """``on_done``, with a failed worker's error in place of ``exit code N`` (a
        timeout, a cancel or a signal keep theirs)."""

        def report(outcome: Outcome) -> None:
            if (self.error and outcome.exit_code is not None
                    and outcome.error == f"exit code {outcome.exit_code}"):
                outcome = replace(outcome, error=self.error)
            on_done(outcome)

        return report


__all__ = ["MARK", "WorkerSink", "error_line", "record_line"]
