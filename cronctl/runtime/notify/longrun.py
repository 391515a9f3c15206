"""Finding ``long_running`` executions (docs/behaviour.md#sandbox-and-output): an attempt still
running ``long_running_after`` after it started raises the event once.

``long_running_after = "auto"`` is three times the 95th percentile of the durations of the
job's last 20 successes, at least a minute; a job with no success yet has no threshold
(nothing to compare with), and none is sent. Runs on the notification thread: the store
is read there (once a minute per job at most), never on the scheduler thread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from cronctl.jobs.model import AUTO_LONG_RUNNING, ExecutionStatus, JobDefinition
from cronctl.runtime.fire.records import Run
from cronctl.store.base import Store

AUTO_SAMPLES = 20  # the last successes "auto" looks at
AUTO_FACTOR = 3
AUTO_MINIMUM = timedelta(minutes=1)
AUTO_CACHE = 60.0  # seconds an "auto" threshold is reused before it is read again


def auto_threshold(durations: list[timedelta]) -> timedelta | None:
    """3 × the 95th percentile (nearest rank) of ``durations``, at least a minute; None
    without any."""
    if not durations:
        return None
    ranked = sorted(durations)
    p95 = ranked[max(0, math.ceil(0.95 * len(ranked)) - 1)]
    return max(AUTO_MINIMUM, p95 * AUTO_FACTOR)


class LongRunning:
    """The attempts being watched, by the core's key, each with its deadline."""

    def __init__(self, *, store: Store, monotonic: Callable[[], float] = time.monotonic
                 ) -> None:
        self._store = store
        self._mono = monotonic
        self._auto: dict[str, tuple[float, timedelta | None]] = {}  # job -> (until, value)
        self._watched: dict[int, tuple[Run, datetime, timedelta]] = {}

    def threshold(self, job: JobDefinition) -> timedelta | None:
        setting = job.long_running_after
        if setting is None or isinstance(setting, timedelta):
            return setting
        assert setting == AUTO_LONG_RUNNING
        cached = self._auto.get(job.id)
        now = self._mono()
        if cached is not None and cached[0] > now:
            return cached[1]
        rows = self._store.list_executions(job_id=job.id, status=ExecutionStatus.SUCCEEDED,
                                           limit=AUTO_SAMPLES)
        value = auto_threshold([r.finished_at - r.started_at for r in rows
                                if r.started_at is not None and r.finished_at is not None])
        self._auto[job.id] = (now + AUTO_CACHE, value)
        return value

    def started(self, run: Run, at: datetime) -> None:
        limit = self.threshold(run.job)
        if limit is not None:
            self._watched[run.fire.key] = (run, at + limit, limit)

    def ended(self, run: Run) -> None:
        self._watched.pop(run.fire.key, None)

    def due(self, now: datetime) -> list[tuple[Run, timedelta]]:
        """The attempts that passed their threshold by ``now``; each is returned once."""
        found = [(key, run, limit) for key, (run, deadline, limit) in self._watched.items()
                 if deadline <= now]
        for key, _run, _limit in found:
            del self._watched[key]
        return [(run, limit) for _key, run, limit in found]

    def __len__(self) -> int:
        return len(self._watched)


__all__ = ["AUTO_LONG_RUNNING", "LongRunning", "auto_threshold"]
