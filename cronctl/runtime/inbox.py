"""The scheduler thread's inbox: one small immutable message type per thing another thread
can ask of it.

Messages are ``NamedTuple``s: built on worker threads for every completion, so they cost
a tuple's construction, and they are matched by type on the scheduler thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import NamedTuple

from cronctl.core import ExecKey, Skip
from cronctl.dispatch.base import Outcome
from cronctl.dispatch.relay import Staged
from cronctl.jobs.model import JobDefinition, Origin
from cronctl.store.records import ExecutionRecord


class Done(NamedTuple):
    """An attempt ended (``key``: the core's, or the relay's for an attempt a worker
    started before the core admitted it)."""

    key: ExecKey | Staged
    outcome: Outcome
    at: datetime | None = None  # when it ended (the scheduler may hear of it much later)


class WaitersLanded(NamedTuple):
    """The pending rows of a batch of waiting fires were written."""


class Stop(NamedTuple):
    """Stop firing; ``timeout`` overrides ``shutdown_timeout`` (None: the configured one)."""

    timeout: float | None


class Cancel(NamedTuple):
    """Cancel these executions, if they run here."""

    execution_ids: set[int]


class Trigger(NamedTuple):
    """Run one occurrence of ``job_id`` now (from :meth:`Scheduler.trigger`, with ``done``,
    or from a trigger request row, with ``request_id``)."""

    job_id: str
    origin: Origin
    planned: datetime | None
    request_id: int | None
    done: Future[str] | None


class Reload(NamedTuple):
    """Swap the job set; ``done`` is set once it was applied."""

    jobs: tuple[JobDefinition, ...]
    done: Future[None]


class Paused(NamedTuple):
    """Jobs paused (True) or resumed (False) cluster-wide since the last poll."""

    changes: Mapping[str, bool]


class Recover(NamedTuple):
    """Executions handed to this node to recover, and when the interrupted ones ended."""

    rows: Sequence[ExecutionRecord]
    ends: Mapping[int, datetime]


class StoreBack(NamedTuple):
    """The store is reachable again after an outage."""


class Decided(NamedTuple):
    """A dependent's instant this node decided not to run (its skip record is written):
    for the observers (metrics, the ``skipped`` event), once cluster-wide."""

    skip: Skip


Message = (Done | WaitersLanded | Stop | Cancel | Trigger | Reload | Paused | Recover
           | StoreBack | Decided)
Post = Callable[[Message], None]

__all__ = ["Cancel", "Decided", "Done", "Message", "Paused", "Post", "Recover", "Reload", "Stop",
           "StoreBack", "Trigger", "WaitersLanded"]
