"""Job logs and progress: buffered per execution, written to the store in batches.

The runtime owns one :class:`LogFlusher`. Each tracked attempt logs into
``flusher.sink_for(execution_id)``; nothing touches the database on the handler's
thread. The runtime calls :meth:`LogFlusher.flush` every ``progress_flush_interval``
(one ``append_logs`` batch for every execution, plus the latest progress of each),
:meth:`LogFlusher.drain` when an execution ends, and :meth:`LogFlusher.drain_all` at
shutdown. Every store write goes through one lock, so a drain waits for a flush that is
still writing and an execution's lines keep their order in the store.

What an execution keeps of its output (``output_limit`` and ``[retention]
max_log_lines``) is decided before its lines get here, by its dispatcher's
:class:`~cronctl.dispatch.output.OutputBudget`: the first half, one line counting what
was dropped, the last half.

Lines the store refused stay buffered for the next write; what cannot be written within
the bounds (``drain``'s rounds, ``drain_all``'s deadline, the buffer cap while the
database is away) is dropped and reported at WARNING with a count.

Untracked attempts have no row to attach lines to: they get a :class:`ProcessLogSink`,
which writes to the process log (``cronctl.job``) with control characters escaped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from cronctl.escaping import printable

log = logging.getLogger("cronctl.dispatch")
job_log = logging.getLogger("cronctl.job")

MAX_BUFFERED_LINES = 200_000  # across executions, while the database is unreachable
# docs/behaviour.md#retention-notifications-and-metrics: [retention] max_log_lines
MAX_LINES_PER_EXECUTION = 10_000
MAX_MESSAGE_CHARS = 64 * 1024

def _level_name(level: int) -> str:
    name = logging.getLevelName(level)
    return name if isinstance(name, str) and not name.startswith("Level ") else str(level)


class ProcessLogSink:
    """The sink of an untracked attempt: lines go to the process log, escaped."""

    __slots__ = ("job_id", "execution_id", "_logger")

    def __init__(self, job_id: str, execution_id: int | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.job_id = job_id
        self.execution_id = execution_id
        self._logger = logger or job_log

    def log(self, level: int, message: str) -> None:
        if self._logger.isEnabledFor(level):
            self._logger.log(level, "job %s: %s", printable(self.job_id),
                             printable(message),
                             extra={"job_id": self.job_id, "execution_id": self.execution_id})

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        if self._logger.isEnabledFor(logging.DEBUG):
            of = "" if total is None else f"/{total:g}"
            text = f" {printable(message)}" if message else ""
            self._logger.debug("job %s: progress %g%s%s", printable(self.job_id), done, of,
                               text, extra={"job_id": self.job_id,
                                            "execution_id": self.execution_id})


class BufferedSink:
    """One execution's sink: appends to its :class:`LogFlusher`'s buffer."""

    __slots__ = ("execution_id", "_flusher")

    def __init__(self, flusher: LogFlusher, execution_id: int) -> None:
        self._flusher = flusher
        self.execution_id = execution_id

    def log(self, level: int, message: str) -> None:
        self._flusher._append(self.execution_id, level, message)

    def progress(self, done: float, total: float | None, message: str | None) -> None:
        self._flusher._set_progress(self.execution_id, done, total, message)


_Progress = tuple[float, "float | None", "str | None"]

LogEntry = tuple[int, datetime, "str | int", str]
"""``(execution_id, at, level, message)``; ``level`` is a name ("INFO") or a logging int."""


class LogWriter(Protocol):
    """Where the flusher writes: the part of the state store dispatch needs. Dispatch
    defines it so that it never imports the store; the runtime passes its store in.

    Both methods may raise (the database is away): the flusher keeps what was not
    written and tries again."""

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        """Append lines; each execution's lines keep the order given. Lines of an
        execution that has no row are dropped."""
        ...

    def record_progress(
        self, execution_id: int, done: float, total: float | None, message: str | None
    ) -> None:
        """Overwrite the execution's progress snapshot."""
        ...


class LogFlusher:
    """Buffers job log lines and progress per execution; writes them in batches.

    Thread-safe: sinks append from handler threads while the runtime flushes from its own.
    ``clock`` stamps each line (default: the current UTC time)."""

    def __init__(
        self,
        store: LogWriter,
        *,
        clock: Callable[[], datetime] | None = None,
        max_buffered: int = MAX_BUFFERED_LINES,
        echo: logging.Logger | None = None,
    ) -> None:
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self._max_buffered = max_buffered
        self._echo = echo  # also log every line here (at DEBUG), e.g. for `run -v`
        self._lock = threading.Lock()  # guards the buffers below
        self._write_lock = threading.Lock()  # one store write at a time
        self._lines: dict[int, list[LogEntry]] = {}
        self._buffered = 0
        self._progress: dict[int, _Progress] = {}
        self._overflow = 0  # dropped because the buffer was full; reported at next flush

    # --- the sink side ---------------------------------------------------------------------

    def sink_for(self, execution_id: int) -> BufferedSink:
        return BufferedSink(self, execution_id)

    def _append(self, execution_id: int, level: int, message: str) -> None:
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + " [cronctl: message truncated]"
        entry: LogEntry = (execution_id, self._clock(), _level_name(level), message)
        with self._lock:
            if self._buffered >= self._max_buffered:
                self._overflow += 1
                return
            self._lines.setdefault(execution_id, []).append(entry)
            self._buffered += 1
        echo = self._echo
        if echo is not None and echo.isEnabledFor(logging.DEBUG):
            echo.debug("execution %s: %s", execution_id, printable(message))

    def _set_progress(self, execution_id: int, done: float, total: float | None,
                      message: str | None) -> None:
        with self._lock:
            self._progress[execution_id] = (done, total, message)

    @property
    def buffered(self) -> int:
        """Lines waiting to be written."""
        return self._buffered

    # --- the runtime side --------------------------------------------------------------------

    def flush(self) -> bool:
        """Write everything buffered: all lines in ONE ``append_logs`` call, then the latest
        progress of each execution. Returns False if the store refused something (it stays
        buffered for the next flush)."""
        with self._write_lock:
            with self._lock:
                lines, self._lines = self._lines, {}
                progress, self._progress = self._progress, {}
                self._buffered = 0
                overflow, self._overflow = self._overflow, 0
            if overflow:
                log.warning("%d job log lines were dropped: the buffer was full "
                            "(is the database reachable?)", overflow)
            ok = True
            if lines:
                batch = [entry for entries in lines.values() for entry in entries]
                try:
                    self._store.append_logs(batch)
                except Exception as exc:
                    ok = False
                    log.warning("could not write %d job log lines (kept for the next try): %s",
                                len(batch), _one_line(exc))
                    self._requeue(lines)
            for execution_id, (done, total, message) in progress.items():
                try:
                    self._store.record_progress(execution_id, done, total, message)
                except Exception as exc:
                    ok = False
                    log.warning("could not record progress of execution %s: %s",
                                execution_id, _one_line(exc))
                    with self._lock:
                        self._progress.setdefault(execution_id, (done, total, message))
            return ok

    def drain(self, execution_id: int, rounds: int = 3) -> bool:
        """The execution ended: write its remaining lines and progress now (waiting for a
        flush that is still writing), in up to ``rounds`` attempts. Whatever is still
        unwritten after that is dropped and reported at WARNING. Returns True if
        everything was written."""
        error: Exception | None = None
        for _ in range(max(1, rounds)):
            with self._write_lock:
                with self._lock:
                    entries = self._lines.pop(execution_id, None)
                    progress = self._progress.pop(execution_id, None)
                    if entries:
                        self._buffered -= len(entries)
                if not entries and progress is None:
                    return True
                try:
                    if entries:
                        self._store.append_logs(entries)
                        entries = None
                    if progress is not None:
                        self._store.record_progress(execution_id, *progress)
                        progress = None
                except Exception as exc:
                    error = exc
                    with self._lock:
                        if entries:
                            self._lines[execution_id] = entries + self._lines.get(execution_id, [])
                            self._buffered += len(entries)
                        if progress is not None:
                            self._progress.setdefault(execution_id, progress)
        with self._lock:
            lost = self._lines.pop(execution_id, [])
            self._buffered -= len(lost)
            lost_progress = self._progress.pop(execution_id, None)
        if lost or lost_progress is not None:
            reason = _one_line(error) if error else "more lines kept arriving"
            log.warning("execution %s: %d job log lines%s could not be written: %s",
                        execution_id, len(lost),
                        " and its progress" if lost_progress is not None else "", reason)
            return False
        return True

    def drain_all(self, deadline: float, *, retry_interval: float = 0.2) -> int:
        """At shutdown: flush until everything is written or ``deadline`` (a
        :func:`time.monotonic` value) passes. What is left is dropped and reported at
        WARNING. Returns the number of lines lost."""
        while True:
            if self.flush():
                with self._lock:
                    if not self._lines and not self._progress:
                        return 0
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(retry_interval, remaining))
        with self._lock:
            lost = self._buffered
            executions = len(self._lines) + len(
                [e for e in self._progress if e not in self._lines])
            self._lines.clear()
            self._progress.clear()
            self._buffered = 0
        if lost or executions:
            log.warning("shutdown: %d job log lines of %d executions could not be written "
                        "before the deadline; they are lost", lost, executions)
        return lost

    # --- helpers ---------------------------------------------------------------------------

    def _requeue(self, lines: dict[int, list[LogEntry]]) -> None:
        """Put refused lines back in front of anything logged meanwhile, within the cap."""
        with self._lock:
            newer, self._lines = self._lines, {}
            total = 0
            for execution_id in {**lines, **newer}:
                merged = lines.get(execution_id, []) + newer.get(execution_id, [])
                self._lines[execution_id] = merged
                total += len(merged)
            excess = total - self._max_buffered
            if excess > 0:  # drop the oldest lines of the largest buffers first
                for execution_id in sorted(self._lines, key=lambda e: -len(self._lines[e])):
                    entries = self._lines[execution_id]
                    cut = min(excess, len(entries))
                    del entries[:cut]
                    excess -= cut
                    self._overflow += cut
                    total -= cut
                    if excess <= 0:
                        break
            self._buffered = total


def _one_line(exc: Any) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
