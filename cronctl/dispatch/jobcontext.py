"""Building the :class:`~cronctl.context.JobContext` of one attempt.

``ctx.log`` is a :class:`SinkLogger`: a real :class:`logging.Logger` that is *not*
registered with the logging manager (``logging.getLogger`` never sees it), has no parent
and no handlers, and hands every record straight to the attempt's :class:`LogSink`. It is
garbage once the attempt is over, so one logger per execution leaks nothing.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import fields
from typing import Any

from cronctl.context import JobContext, _always_owner
from cronctl.dispatch.base import DispatchRequest, LogSink

_formatter = logging.Formatter()
_internal = logging.getLogger("cronctl.dispatch")


class SinkLogger(logging.Logger):
    """A logger whose records go to one execution's sink (level NOTSET: everything)."""

    def __init__(self, name: str, sink: LogSink) -> None:
        if _FAST_LOGGER:
            # One per fire: logging.Logger.__init__ (Filterer, _checkLevel, eight
            # attributes one by one) costs ~1 us; this fills the same attributes at once
            # (a unit test compares them with a constructed logger's).
            self.__dict__.update(filters=[], name=name, level=logging.NOTSET, parent=None,
                                 propagate=False, handlers=[], disabled=False, _cache={},
                                 _sink=sink)
            return
        super().__init__(name)
        self.propagate = False
        self._sink = sink

    def handle(self, record: logging.LogRecord) -> None:
        if self.disabled or not self.filter(record):
            return
        try:
            message = record.getMessage()
            if record.exc_info:
                message = f"{message}\n{_formatter.formatException(record.exc_info)}"
            elif record.exc_text:
                message = f"{message}\n{record.exc_text}"
            if record.stack_info:
                message = f"{message}\n{_formatter.formatStack(record.stack_info)}"
            self._sink.log(record.levelno, message)
        except Exception:
            _internal.exception("job log record dropped")

    def getEffectiveLevel(self) -> int:  # noqa: N802 - logging's API
        return self.level or logging.DEBUG

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - logging's API
        if self.disabled or self.manager.disable >= level:
            return False
        return level >= (self.level or logging.DEBUG)


def make_context(
    request: DispatchRequest,
    sink: LogSink,
    cancel_event: threading.Event | None = None,
) -> JobContext:
    """The context a handler (and every interceptor) sees for ``request``."""
    job = request.job
    values: dict[str, Any] = {
        "job_id": job.id,
        "execution_id": request.execution_id,
        "occurrence_id": request.occurrence_id,
        "scheduled_at": request.scheduled_at,
        "attempt": request.attempt,
        "origin": request.origin.value,
        "parameters": job.parameters,
        "payload": job.payload,
        "fencing_token": request.fencing_token,
        "log": SinkLogger(f"cronctl.job.{job.id}", sink),
        "_cancel_event": cancel_event if cancel_event is not None else threading.Event(),
        "_progress": sink.progress,
        "_owner": request.still_owner or _always_owner,
    }
    if not _FAST:
        return JobContext(**values)
    # One per fire: the frozen dataclass's __init__ sets its 12 fields one
    # object.__setattr__ at a time (~3.5 us); filling __dict__ at once gives the same
    # object (a unit test compares them field by field).
    ctx = object.__new__(JobContext)
    ctx.__dict__.update(values)
    return ctx


# Only while a Logger has exactly the attributes SinkLogger fills (else its constructor).
_FAST_LOGGER = set(vars(logging.Logger("probe"))) == {
    "filters", "name", "level", "parent", "propagate", "handlers", "disabled", "_cache"}

# Only while JobContext is a plain dataclass (a __dict__, no __post_init__) with exactly
# the fields filled above; otherwise make_context calls its constructor.
_FAST = (not hasattr(JobContext, "__slots__") and not hasattr(JobContext, "__post_init__")
         and {f.name for f in fields(JobContext)} == {
             "job_id", "execution_id", "occurrence_id", "scheduled_at", "attempt", "origin",
             "parameters", "payload", "fencing_token", "log", "_cancel_event", "_progress",
             "_owner"})
