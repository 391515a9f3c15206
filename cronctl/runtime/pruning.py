"""Pruning inside ``cronctl run`` (docs/behaviour.md#retention-notifications-and-metrics): every
``[retention] interval`` one pass, on one node at a time cluster-wide, in small steps on the I/O
thread.

- One node at a time: a pass starts only on the node that takes the guard lock
  :data:`~cronctl.store.records.PRUNE_LOCK` (a row in ``guard_locks``). The node drops it
  when the pass ends; a node that dies holding it loses it like every guard lock of a
  dead node (``release_stale_locks``, run by every live node each heartbeat interval),
  and a node that stops drops its locks when it unregisters. Nothing wedges.
- Never on the scheduler thread: each step (:meth:`Store.prune_step`, one transaction
  of at most :func:`batch_for` rows) is a task of the I/O thread, and the next one is queued
  after a pause at least as long as the step took, so the I/O thread's own work (final
  statuses, log flushes, heartbeats) and the scheduler thread's writes get in between.
  On SQLite every write of the process goes through one lock
  (:mod:`cronctl.runtime.serialize`), so a fire waits for at most one step.
- Visible: one INFO line per pass with the counts (DEBUG when another node prunes).
- A store outage abandons the pass (the next interval starts a new one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from cronctl.config import RetentionSettings
from cronctl.errors import first_line
from cronctl.runtime.io import IoWorker, Task
from cronctl.store.base import (
    PruneCounts,
    PrunePolicy,
    PruneProgress,
    Store,
    StoreUnavailable,
)
from cronctl.store.writerecords import PRUNE_LOCK

log = logging.getLogger("cronctl.runtime")

# Rows per step (one transaction). On SQLite a fire of this process waits for a step
# holding the write lock: 500 rows are ~10 ms (bench_retention), 2,000 ~40 ms for ~15%
# more rows per second. PostgreSQL locks only the rows deleted.
BATCH = {"sqlite": 500}
BATCH_DEFAULT = 2000


def batch_for(store: Store) -> int:
    return BATCH.get(store.kind, BATCH_DEFAULT)

MIN_PAUSE = 0.02  # seconds between two steps, at least
FIRST_PASS = 60.0  # seconds after start-up, at most, until the first pass
VACUUM_PAGES = 500  # SQLite pages given back per step after a pass (2 MiB)
VACUUM_SLACK = 0.1  # ...keeping free pages up to this fraction of the pages in use


def policy_for(settings: RetentionSettings, now: datetime) -> PrunePolicy:
    """The cutoffs of ``[retention]`` at ``now``: executions and done trigger requests
    older than ``executions``, skip records older than ``skipped``."""
    cutoff = now - settings.executions
    return PrunePolicy(executions_before=cutoff, keep_last=settings.keep_last,
                       skipped_before=now - settings.skipped, triggers_before=cutoff)


def describe(counts: PruneCounts) -> str:
    return (f"executions={counts.executions} log_lines={counts.log_lines} "
            f"skipped={counts.skipped} trigger_requests={counts.trigger_requests}")


class Pruner:
    """The passes of one scheduler. Every method runs on the I/O thread."""

    def __init__(self, store: Store, settings: RetentionSettings, *, node_id: str,
                 clock: Callable[[], datetime], later: Callable[[float, Task], None],
                 is_down: Callable[[], bool], batch: int | None = None) -> None:
        self.store = store
        self.settings = settings
        self.node_id = node_id
        self.clock = clock
        self.later = later
        self.is_down = is_down
        self.batch = batch_for(store) if batch is None else batch
        self.passes = 0  # completed passes (tests)
        self._policy: PrunePolicy | None = None
        self._at: PruneProgress | None = None
        self._counts = PruneCounts()
        self._began = 0.0
        self._freed = 0  # SQLite pages given back in this pass

    @classmethod
    def attach(cls, io: IoWorker, store: Store, settings: RetentionSettings, *, node_id: str,
               clock: Callable[[], datetime], is_down: Callable[[], bool]) -> Pruner:
        """A pruner whose passes ``io`` starts every ``settings.interval`` (none for
        ``database = "none"`` or ``interval = 0``). Call before ``io.start()``."""
        pruner = cls(store, settings, node_id=node_id, clock=clock, later=io.after,
                     is_down=is_down)
        interval = settings.interval.total_seconds()
        if store.persistent and interval > 0:
            io.every("prune", interval, pruner.start_pass, first=min(interval, FIRST_PASS))
        return pruner

    @property
    def running(self) -> bool:
        return self._policy is not None

    def start_pass(self) -> None:
        if self.running or self.is_down():
            return
        if not self.store.take_maintenance_lock(PRUNE_LOCK, node_id=self.node_id,
                                                now=self.clock()):
            log.debug("prune: another node is pruning; skipped this pass")
            return
        self._policy = policy_for(self.settings, self.clock())
        self._at = PruneProgress()
        self._counts = PruneCounts()
        self._began = time.monotonic()
        self._freed = 0
        self._step()

    def _step(self) -> None:
        policy = self._policy
        if policy is None:
            return
        if self.is_down():
            self._abandon("the store is unreachable", release=False)
            return
        began = time.monotonic()
        try:
            if self._at is not None:
                step = self.store.prune_step(policy, self._at, batch=self.batch)
                self._counts += step.counts
                self._at = step.next
                more = True
            else:  # pruned: give SQLite pages back, a bounded step at a time
                freed = self.store.reclaim_space(max_pages=VACUUM_PAGES,
                                                 keep_fraction=VACUUM_SLACK)
                self._freed += freed
                more = freed >= VACUUM_PAGES
        except StoreUnavailable:
            self._abandon("the store is unreachable", release=False)
            raise  # the I/O thread hands it to the store health
        except Exception as exc:
            self._abandon(first_line(exc))
            return
        if self._at is None and not more:
            self._finish()
            return
        took = time.monotonic() - began
        self.later(max(took, MIN_PAUSE), self._step)

    def _finish(self) -> None:
        counts, self._policy = self._counts, None
        self.passes += 1
        self._release()
        freed = f" freed_pages={self._freed}" if self._freed else ""
        log.info("pruned %s in %.1fs%s", describe(counts), time.monotonic() - self._began,
                 freed)

    def _abandon(self, why: str, *, release: bool = True) -> None:
        """Stop the pass. Without ``release`` (the store is away: its health logs that,
        once) the lock stays this node's until the next pass here takes it again, or
        this node stops or dies."""
        counts, self._policy = self._counts, None
        log.log(logging.WARNING if release else logging.DEBUG,
                "prune pass stopped (%s) after %s; the next pass continues", why,
                describe(counts))
        if release:
            try:
                self._release()
            except Exception as exc:  # it stays ours until we stop or the next pass
                log.debug("prune: could not release the lock: %s", exc)

    def _release(self) -> None:
        self.store.release_maintenance_lock(PRUNE_LOCK, node_id=self.node_id)


__all__ = ["Pruner", "batch_for", "describe", "policy_for"]
