"""What the fire path tells its observers (metrics, notifications): one call per event.

The runtime calls a :class:`Watch` at a handful of points of the scheduler thread. Every
method must be cheap (a counter increment, a queue put): an observer never does I/O
there. Without ``[metrics]`` (and notifications) the watch is :class:`NullWatch`, whose
methods do nothing.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Protocol, TypeVar

from cronctl.core import CloseInterrupted, Missed, Skip
from cronctl.jobs.model import ExecutionStatus
from cronctl.runtime.records import Run

if TYPE_CHECKING:
    from cronctl.runtime.scheduler import Scheduler

W = TypeVar("W")


class Watch(Protocol):
    """The events of the fire path, called on the scheduler thread."""

    def loop(self, waiting: int) -> None:
        """The scheduler loop is alive (called every poll, about twice a second); ``waiting``
        fires wait for a slot or a serial group."""

    def started(self, run: Run) -> None:
        """An attempt was dispatched (``run.fire.due`` is when it should have started)."""

    def finished(self, run: Run, status: ExecutionStatus, error: str | None) -> None:
        """An attempt ended with a final status (``dead_letter`` for the last one)."""

    def interrupted(self, a: CloseInterrupted) -> None:
        """A recovered execution was closed (``failed`` or ``dead_letter``) by this node."""

    def skipped(self, a: Skip) -> None:
        """A planned instant did not run (any reason but a misfire set: see ``missed``)."""

    def missed(self, a: Missed) -> None:
        """A misfire set was decided; ``a.dropped`` of its instants will not run."""


class NullWatch:
    """Nothing observes: every event is dropped."""

    def loop(self, waiting: int) -> None:
        return None

    def started(self, run: Run) -> None:
        return None

    def finished(self, run: Run, status: ExecutionStatus, error: str | None) -> None:
        return None

    def interrupted(self, a: CloseInterrupted) -> None:
        return None

    def skipped(self, a: Skip) -> None:
        return None

    def missed(self, a: Missed) -> None:
        return None


class Fanout:
    """Several watches, called in order."""

    def __init__(self, *watches: Watch) -> None:
        self.watches = watches

    def find(self, kind: type[W]) -> W | None:
        for w in self.watches:
            if isinstance(w, kind):
                return w
        return None

    def loop(self, waiting: int) -> None:
        for w in self.watches:
            w.loop(waiting)

    def started(self, run: Run) -> None:
        for w in self.watches:
            w.started(run)

    def finished(self, run: Run, status: ExecutionStatus, error: str | None) -> None:
        for w in self.watches:
            w.finished(run, status, error)

    def interrupted(self, a: CloseInterrupted) -> None:
        for w in self.watches:
            w.interrupted(a)

    def skipped(self, a: Skip) -> None:
        for w in self.watches:
            w.skipped(a)

    def missed(self, a: Missed) -> None:
        for w in self.watches:
            w.missed(a)


def find_watch(watch: Watch, kind: type[W]) -> W | None:
    """The watch of type ``kind`` in ``watch`` (itself, or one part of a :class:`Fanout`)."""
    if isinstance(watch, kind):
        return watch
    return watch.find(kind) if isinstance(watch, Fanout) else None


def watch_for(scheduler: Scheduler) -> Watch:
    """The observers the configuration asks for (``[metrics]``), else :class:`NullWatch`."""
    watches: list[Watch] = []
    if scheduler.config.metrics_listen is not None:
        from cronctl.runtime.metrics import Metrics

        watches.append(Metrics.for_scheduler(scheduler))
    if not watches:
        return NullWatch()
    return watches[0] if len(watches) == 1 else Fanout(*watches)


def serving(scheduler: Scheduler) -> contextlib.AbstractContextManager[None]:
    """Serve ``/metrics`` and ``/healthz`` while inside, when ``[metrics] listen`` is set
    (prometheus_client is imported only then)."""
    listen = scheduler.config.metrics_listen
    if listen is None:
        return contextlib.nullcontext()
    from cronctl.runtime.metrics import Metrics, serve_metrics

    return serve_metrics(listen, find_watch(scheduler.watch, Metrics))
