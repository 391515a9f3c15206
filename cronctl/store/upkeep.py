"""The part of the :class:`~cronctl.store.base.Store` Protocol that keeps a long-running
installation accounted for and bounded: the skip ledger (docs/behaviour.md#durability-and-clusters),
notification marks and delivery failures, and retention (section 7). Same conventions as
:mod:`cronctl.store.base`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from cronctl.jobs.model import ExecutionStatus
from cronctl.store.writerecords import PruneCounts, PrunePolicy, PruneProgress, PruneStep, SkipRun


class Upkeep(Protocol):
    """Accounting and bounds: the skip ledger, notification marks and delivery failures,
    retention.

    Invariant: each decision is recorded once cluster-wide, whichever nodes take it (a
    skipped instant, a notification's mark), and retention never deletes a live
    execution nor one of a job's newest ``keep_last``; passes may run concurrently, and
    a second pass with the same policy deletes nothing. The reads of the skip ledger and
    of delivery failures are in :class:`~cronctl.store.base.Reads`."""

    # --- the skip ledger -------------------------------------------------------------

    def record_skips(self, runs: Sequence[SkipRun], *, now: datetime | None = None
                     ) -> list[bool]:
        """Record planned instants that did not run, in ONE transaction. Written once
        cluster-wide: a run whose ``(job, scope, first_at)`` is already recorded changes
        nothing, except that a longer run extends it; nor does a run over an instant that
        has a started (not ``pending``) execution in the same scope (it ran: the skip was
        decided on a stale view, e.g. by a node cut off while another ran it). Per run:
        whether this call recorded something new (the node that did is the one that
        notifies)."""
        ...

    # --- notifications (docs/behaviour.md#retention-notifications-and-metrics)
    # ------------------------------------------------

    def claim_notice(self, key: str, *, event: str, job_id: str, node_id: str,
                     now: datetime | None = None) -> bool:
        """Insert-if-absent of a notification decision's ``key`` (at most 64 chars): True
        for the one call cluster-wide that inserted it (that node sends the event)."""
        ...

    def forget_notices(self, before: datetime) -> int:
        """Delete the marks created before ``before``; returns how many."""
        ...

    def previous_outcome(self, job_id: str, before: datetime, *,
                         scope_node: str | None = None
                         ) -> tuple[datetime, ExecutionStatus] | None:
        """``(scheduled_at, status)`` of the newest ended execution of ``job_id`` planned
        before ``before`` (``succeeded``, ``failed``, ``abandoned`` or ``dead_letter``;
        cancelled ones are passed over), or None. ``scope_node``: only that node's
        every_instance rows."""
        ...

    def note_delivery(self, node_id: str, *, ok: bool, error: str | None = None,
                      now: datetime | None = None) -> None:
        """A delivery of ``node_id`` failed (counted; failing since the first failure
        after the last success) or worked (clears it)."""
        ...

    # --- retention ---------------------------------------------------------------------

    def prune_step(self, policy: PrunePolicy, at: PruneProgress | None = None, *,
                   batch: int = 2000, dry_run: bool = False) -> PruneStep:
        """One small step of a prune pass (see :class:`PrunePolicy` for what is deleted),
        starting where ``at`` says (``None``: the beginning), in ONE transaction that
        deletes at most ``batch`` rows (executions and their log lines together; an
        execution with more lines than that is deleted over several steps, lines
        first). Returns what it deleted and where the next step starts (``None``: done).

        Never deletes a ``pending`` or ``running`` execution, nor one of the newest
        ``keep_last`` finished executions of a job (newest by ``scheduled_at``, then id,
        as :meth:`list_executions` orders them); an execution goes once it was both
        planned and ended before the cutoff. ``dry_run`` counts instead of deleting
        (many rows per step) and writes nothing. Safe to run concurrently with the
        scheduler and with another pass: rows already deleted are simply not counted
        again."""
        ...

    def prune(self, policy: PrunePolicy, *, batch: int = 2000,
              dry_run: bool = False) -> PruneCounts:
        """A whole pass: :meth:`prune_step` until done (many small transactions, so NOT
        atomic as a whole; each step is). Run twice with the same policy, the second
        pass deletes nothing."""
        ...

    def take_maintenance_lock(self, key: str, *, node_id: str, now: datetime) -> bool:
        """Take the cluster-wide lock ``key`` (a guard lock row with no execution) for
        ``node_id``; True if it now holds it (also when it already did). It is released
        by :meth:`release_maintenance_lock`, and like every guard lock by
        :meth:`release_locks` and :meth:`release_stale_locks` when its node stops or
        dies, so a node that dies holding it never wedges the cluster."""
        ...

    def release_maintenance_lock(self, key: str, *, node_id: str) -> bool:
        """Drop ``key`` if ``node_id`` holds it; whether it did."""
        ...

    def reclaim_space(self, *, max_pages: int = 2000, keep_fraction: float = 0.0) -> int:
        """SQLite files with ``auto_vacuum = INCREMENTAL``: give up to ``max_pages`` free
        pages back to the file system, keeping free pages up to ``keep_fraction`` of the
        pages in use (for new rows), in ONE short transaction; how many were given back.
        0 on PostgreSQL (autovacuum makes deleted rows' space reusable) and on SQLite
        files without incremental vacuum (free pages are still reused by new rows)."""
        ...


__all__ = ["Upkeep"]
