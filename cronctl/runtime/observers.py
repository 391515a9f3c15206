"""Who watches a scheduler: metrics when ``[metrics]`` asks for them, then notifications.

They read the scheduler through :class:`SchedulerView`, a small read-only snapshot, so
neither imports the scheduler (and the scheduler only builds them here).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

from cronctl.config import Config
from cronctl.jobs.model import JobDefinition
from cronctl.runtime.fire.watch import Fanout, Watch, find_watch
from cronctl.store.base import Store


class SchedulerView(Protocol):
    """What observers may read of a running scheduler (from any thread: each answer is one
    read of a value the scheduler thread replaces whole)."""

    @property
    def config(self) -> Config: ...

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    def jobs(self) -> Sequence[JobDefinition]:
        """The current job set (replaced whole on reload)."""

    def job(self, job_id: str) -> JobDefinition | None:
        """The current definition of ``job_id``."""

    def store_down(self) -> bool:
        """The store is unreachable (its outage is being waited out)."""

    def running_count(self) -> int:
        """Attempts running on this node."""

    def alive(self) -> bool:
        """The scheduler thread runs."""

    def refusing(self) -> bool:
        """The scheduler refuses to act (its clock is behind a persisted cursor, or ahead
        of the database server's)."""


def watch_for(view: SchedulerView) -> Watch:
    """Metrics when ``[metrics]`` asks for them, then notifications (which cost nothing
    per fire beyond a lookup while no job has anywhere to send to)."""
    from cronctl.runtime.notify.events import Notifications

    metrics = None
    if view.config.metrics_listen is not None:
        from cronctl import __version__
        from cronctl.runtime.metrics import Metrics, last_success

        store = view.store
        metrics = Metrics(version=__version__, node_id=view.config.node_id, jobs=view.jobs,
                          clock=view.clock, store_up=lambda: not view.store_down(),
                          running=view.running_count,
                          history=lambda job_id: last_success(store, job_id),
                          scheduler_alive=view.alive, refusing=view.refusing)
    notes = Notifications(base=view.config.notify, node_id=view.config.node_id,
                          store=view.store, clock=view.clock, job_of=view.job,
                          jobs=view.jobs, store_down=view.store_down,
                          failed=metrics.notify_failures.inc if metrics else lambda: None)
    return Fanout(metrics, notes) if metrics is not None else notes


def serving(config: Config, watch: Watch) -> contextlib.AbstractContextManager[None]:
    """Serve ``/metrics`` and ``/healthz`` while inside, when ``[metrics] listen`` is set
    (prometheus_client is imported only then)."""
    listen = config.metrics_listen
    if listen is None:
        return contextlib.nullcontext()
    from cronctl.runtime.metrics import Metrics, serve_metrics

    return serve_metrics(listen, find_watch(watch, Metrics))
