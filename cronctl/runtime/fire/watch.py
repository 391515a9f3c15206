"""What the fire path tells its observers (metrics, notifications): one call per event.

The runtime calls a :class:`Watch` at a handful of points of the scheduler thread. Every
method must be cheap (a counter increment, a queue put): an observer never does I/O
there. Without ``[metrics]`` (and notifications) the watch is :class:`NullWatch`, whose
methods do nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol, TypeVar

from cronctl.core import CloseInterrupted, JobState, Missed, Skip
from cronctl.jobs.model import ExecutionStatus
from cronctl.runtime.fire.records import Run
from cronctl.store.base import ExecutionRecord

W = TypeVar("W")


class Watch(Protocol):
    """The events of the fire path, called on the scheduler thread."""

    def begin(self, states: Mapping[str, JobState], now: datetime) -> None:
        """The scheduler starts (before its first fire); ``states`` as the core got them."""

    def close(self) -> None:
        """The scheduler stopped: finish (bounded) and end any thread."""

    def handled(self, job_id: str, planned: datetime) -> None:
        """A planned instant was dealt with: fired, skipped, or run by another node."""

    def abandoned(self, run: Run) -> None:
        """An attempt passed its timeout (its ``finished`` follows)."""

    def loop(self, waiting: int) -> None:
        """The scheduler loop is alive (called every poll, about twice a second); ``waiting``
        fires wait for a slot or a serial group."""

    def started(self, run: Run) -> None:
        """An attempt was dispatched (``run.fire.due`` is when it should have started)."""

    def finished(self, run: Run, status: ExecutionStatus, error: str | None) -> None:
        """An attempt ended with a final status (``dead_letter`` for the last one)."""

    def interrupted(self, a: CloseInterrupted) -> None:
        """A recovered execution was closed (``lost`` or ``dead_letter``) by this node."""

    def skipped(self, a: Skip) -> None:
        """A planned instant did not run (any reason but a misfire set: see ``missed``)."""

    def missed(self, a: Missed) -> None:
        """A misfire set was decided; ``a.dropped`` of its instants will not run."""

    def fenced(self, row: ExecutionRecord, status: ExecutionStatus, at: datetime) -> None:
        """The store refused ``status``, this node's final status of ``row``: the attempt
        was taken over (docs/behaviour.md#durability-and-clusters). Called on the I/O thread."""


class NullWatch:
    """Nothing observes: every event is dropped."""

    def begin(self, states: Mapping[str, JobState], now: datetime) -> None:
        return None

    def close(self) -> None:
        return None

    def handled(self, job_id: str, planned: datetime) -> None:
        return None

    def abandoned(self, run: Run) -> None:
        return None

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

    def fenced(self, row: ExecutionRecord, status: ExecutionStatus, at: datetime) -> None:
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

    def begin(self, states: Mapping[str, JobState], now: datetime) -> None:
        for w in self.watches:
            w.begin(states, now)

    def close(self) -> None:
        for w in self.watches:
            w.close()

    def handled(self, job_id: str, planned: datetime) -> None:
        for w in self.watches:
            w.handled(job_id, planned)

    def abandoned(self, run: Run) -> None:
        for w in self.watches:
            w.abandoned(run)

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

    def fenced(self, row: ExecutionRecord, status: ExecutionStatus, at: datetime) -> None:
        for w in self.watches:
            w.fenced(row, status, at)


def find_watch(watch: Watch, kind: type[W]) -> W | None:
    """The watch of type ``kind`` in ``watch`` (itself, or one part of a :class:`Fanout`)."""
    if isinstance(watch, kind):
        return watch
    return watch.find(kind) if isinstance(watch, Fanout) else None
