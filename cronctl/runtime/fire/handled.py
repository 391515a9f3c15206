"""Planned instants the runtime is done with, and what is recorded of them: the skip
records of instants that did not run (docs/behaviour.md#occurrences-and-the-ledger), the job cursors
(every_instance jobs: also this node's own), the log lines, and the metrics hooks.

The writes go to a :class:`~cronctl.runtime.fire.batches.CursorBatch` that the I/O thread
flushes; nothing here touches the store on the scheduler thread."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from cronctl.core import Missed, SchedulerCore, Skip, SkipReason, needs_store
from cronctl.jobs.model import Mode, Origin
from cronctl.runtime.fire.batches import CursorBatch
from cronctl.runtime.fire.watch import Watch
from cronctl.runtime.logsetup import ids
from cronctl.store.base import SkipRun

log = logging.getLogger("cronctl.runtime")
SCHEDULED = (Origin.CRON, Origin.MISFIRE)
# A replay or manual fire that does not run is no planned instant: no skip record.
_LEDGER_ORIGINS = SCHEDULED


class Handled:
    """``skip``, ``cursor`` and ``missed`` for the firing loop. ``watch`` is read at each
    call: the scheduler installs the metrics/notification watch after start-up."""

    def __init__(self, core: SchedulerCore, *, node_id: str, persistent: bool,
                 watch: Callable[[], Watch]) -> None:
        self.core = core
        self.node_id = node_id
        self.persistent = persistent
        self.watch = watch
        self.cursors = CursorBatch(node_id)
        self.skipped = 0

    def _recorded_job(self, job_id: str) -> Mode | None:
        """The mode of a job whose instants are recorded (tracked, durable store)."""
        job = self.core.job(job_id)
        if job is None or not needs_store(job) or not self.persistent:
            return None
        return job.mode

    def skip(self, a: Skip) -> None:
        self.watch().skipped(a)
        self.skipped += a.count
        mode = self._recorded_job(a.job_id)
        if mode is not None and a.reason is not SkipReason.REMOVED and (
                a.origin in _LEDGER_ORIGINS):
            scope = self.node_id if mode is Mode.EVERY_INSTANCE else None
            self.cursors.skip(SkipRun(a.job_id, a.reason.value, a.planned, a.newest,
                                      a.count, self.node_id, scope, a.detail))
        level = logging.DEBUG if a.reason is SkipReason.REMOVED else logging.INFO
        if a.last is None:
            log.log(level, "skipped job=%s planned=%s reason=%s%s", a.job_id,
                    a.planned.isoformat(), a.reason.value,
                    f" ({a.detail})" if a.detail else "", extra=ids(a.job_id))
        else:  # a run of consecutive planned instants (a misfire set)
            log.log(level, "skipped job=%s planned=%s..%s count=%s%d reason=%s", a.job_id,
                    a.planned.isoformat(), a.last.isoformat(),
                    "" if a.count_exact else ">", a.count, a.reason.value, extra=ids(a.job_id))
        if a.origin in SCHEDULED:
            self.cursor(a.job_id, a.newest)

    def cursor(self, job_id: str, planned: datetime) -> None:
        self.watch().handled(job_id, planned)
        mode = self._recorded_job(job_id)
        if mode is not None:
            self.cursors.add(job_id, planned, per_node=mode is Mode.EVERY_INSTANCE)

    def missed(self, a: Missed) -> None:
        self.watch().missed(a)
        count = str(a.count) if a.count_exact else f"more than {a.count}"
        runs = a.count - a.dropped
        log.info("missed job=%s fires=%s newest=%s policy=%s: %s", a.job_id, count,
                 a.newest.isoformat(), a.policy.value,
                 f"running {runs}, {a.dropped} older dropped" if runs else "skipped",
                 extra=ids(a.job_id))


__all__ = ["SCHEDULED", "Handled"]
