"""The ``fired`` and ``finished ... status=succeeded`` lines of the process log.

A fire logged one INFO line when it started and one when it succeeded; in a burst those
two lines were a third of the scheduler thread's time per fire (bench/PROFILE.md). Now
they are collected and written when the wake that made them ends, as long as no fire
waits for a slot:

- one execution: the line it always had, at INFO
  (``fired job=backup exec=42 planned=... attempt=1 origin=cron``);
- more than one (a burst): each line at DEBUG (made only when DEBUG is enabled, so
  ``cronctl -v run`` shows them all) and ONE INFO line for them all
  (``fired 1000 executions planned=... (jobs a, b, c and 997 more)``).

While fires wait for a slot (a burst bigger than ``max_concurrent_jobs`` draining), the
lines are held until it drains, or for at most :data:`HOLD` seconds, so a burst's
thousands of fires make a few lines, not thousands. Failures, retries, timeouts and
skips are not collected: they are logged where they happen, at their own levels; the
lines held so far are written before a failure, a timeout or a cancel, so an
execution's `fired` line always comes before its end.

The ``finished`` line of an execution with a row is written by the I/O thread once its
final status is committed (:func:`recorded_lines`), never before: the log does not say
``succeeded`` for an attempt that a SIGKILL then leaves ``lost`` and runs again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TypeVar

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.runtime.logsetup import ids

HOLD = 1.0  # seconds the lines of a draining burst are held at most
_NAMED = 3  # job ids named in a summary line

_Fired = tuple[str, int | None, datetime, int, Origin]
_Done = tuple[str, int | None]
_E = TypeVar("_E")


class WakeLog:
    """Collects the lines of the fires of one wake (scheduler thread only)."""

    __slots__ = ("_log", "_clock", "_fired", "_done", "_since")

    def __init__(self, logger: logging.Logger,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._clock = clock
        self._fired: list[_Fired] = []
        self._done: list[_Done] = []
        self._since: float | None = None  # when the oldest held line was collected

    def fired(self, job_id: str, execution_id: int | None, planned: datetime, attempt: int,
              origin: Origin) -> None:
        self._fired.append((job_id, execution_id, planned, attempt, origin))

    def succeeded(self, job_id: str, execution_id: int | None) -> None:
        """An untracked success (no row): its line comes with the wake's. A tracked one's
        comes once its final status is written (:func:`recorded_lines`)."""
        self._done.append((job_id, execution_id))

    def end_wake(self, waiting: int) -> None:
        """The wake is over; ``waiting``: fires still waiting for a slot."""
        if not self._fired and not self._done:
            return
        if waiting:
            now = self._clock()
            if self._since is None:
                self._since = now
            if now - self._since < HOLD:
                return
        self.flush()

    def flush(self) -> None:
        """Write every line collected (also at shutdown)."""
        self._since = None
        fired, self._fired = self._fired, []
        done, self._done = self._done, []
        _lines(self._log, fired, _fired_line, lambda: (
            f"fired {len(fired)} executions planned={_span(e[2] for e in fired)} "
            f"({_jobs(e[0] for e in fired)})"))
        _lines(self._log, done, _done_line, lambda: (
            f"finished {len(done)} executions status=succeeded ({_jobs(e[0] for e in done)})"))


def _lines(log: logging.Logger, entries: Sequence[_E],
           line: Callable[[logging.Logger, int, _E], None], summary: Callable[[], str]) -> None:
    """One entry: its own INFO line; several: each at DEBUG and one INFO ``summary``."""
    if not entries or not log.isEnabledFor(logging.INFO):
        return
    if len(entries) == 1:
        line(log, logging.INFO, entries[0])
        return
    if log.isEnabledFor(logging.DEBUG):
        for entry in entries:
            line(log, logging.DEBUG, entry)
    log.info("%s", summary())


def _span(instants: Iterable[datetime]) -> str:
    times = list(instants)
    first, last = min(times), max(times)
    return first.isoformat() if first == last else f"{first.isoformat()}..{last.isoformat()}"


def _fired_line(log: logging.Logger, level: int, entry: _Fired) -> None:
    job_id, eid, planned, attempt, origin = entry
    log.log(level, "fired job=%s exec=%s planned=%s attempt=%d origin=%s", job_id,
            eid if eid is not None else "-", planned.isoformat(), attempt, origin.value,
            extra=ids(job_id, eid))


def _done_line(log: logging.Logger, level: int, entry: _Done) -> None:
    job_id, eid = entry
    log.log(level, "finished job=%s exec=%s status=succeeded", job_id,
            eid if eid is not None else "-", extra=ids(job_id, eid))


def ended_line(log: logging.Logger, job_id: str, execution_id: int | None,
               status: ExecutionStatus, error: str | None) -> None:
    """The WARNING of an attempt that ended otherwise than ``succeeded``."""
    log.warning("finished job=%s exec=%s status=%s%s", job_id,
                execution_id if execution_id is not None else "-", status.value,
                f" error={error}" if error else "", extra=ids(job_id, execution_id))


def recorded_lines(log: logging.Logger,
                   ended: Sequence[tuple[str, int, ExecutionStatus, str | None]]) -> None:
    """The ``finished`` lines of executions whose final status has just been written
    (the I/O thread, after the commit): a line never announces an ending that a SIGKILL
    a moment later turns into ``lost`` and a next attempt. Successes as :meth:`WakeLog.
    flush` writes them (one line, or a summary of a batch), the others each a WARNING. A
    final status the store refused gets its line too, just before the ``fenced`` WARNING
    that says so."""
    done = [(job_id, eid) for job_id, eid, status, _e in ended
            if status is ExecutionStatus.SUCCEEDED]
    _lines(log, done, _done_line, lambda: (
        f"finished {len(done)} executions status=succeeded ({_jobs(e[0] for e in done)})"))
    for job_id, eid, status, error in ended:
        if status is not ExecutionStatus.SUCCEEDED:
            ended_line(log, job_id, eid, status, error)


def _jobs(job_ids: Iterable[str]) -> str:
    """``jobs a, b, c and 997 more`` (distinct ids, in order)."""
    names = list(dict.fromkeys(job_ids))
    shown = ", ".join(names[:_NAMED])
    more = len(names) - _NAMED
    word = "job" if len(names) == 1 else "jobs"
    return f"{word} {shown} and {more} more" if more > 0 else f"{word} {shown}"
