"""What a starting scheduler reads before it acts: the cursors to catch up from, and the
executions to recover with the time each interrupted one really ended.

Kept apart from :mod:`cronctl.runtime.scheduler` (which calls these in order in
``start``) so the start-up reads can be read, and tested, on their own."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from cronctl.core import JobState, RecoveredExecution, cap_cursors
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Mode
from cronctl.runtime.liveness import Liveness
from cronctl.runtime.logsetup import ids
from cronctl.store.base import ExecutionRecord, NodeRecord, Store

log = logging.getLogger("cronctl.runtime")


def shared_states(store: Store) -> dict[str, JobState]:
    """Every job's cluster-wide cursor and paused flag."""
    return {job_id: JobState(cursor, paused)
            for job_id, (cursor, paused) in store.job_states().items()}


def node_states(store: Store, node: str, jobs: Sequence[JobDefinition],
                shared: dict[str, JobState]) -> dict[str, JobState]:
    """The states the core starts from: an every_instance job catches up from this node's
    own cursor (no row yet: this node never handled it), never from another node's."""
    mine = store.node_cursors(node)
    per_node = {j.id for j in jobs if j.mode is Mode.EVERY_INSTANCE}
    return {job_id: JobState(mine.get(job_id), st.paused) if job_id in per_node else st
            for job_id, st in shared.items()}


def capped(states: dict[str, JobState], database: datetime | None) -> dict[str, JobState]:
    """``states`` with cursors past the database server's clock (written by a node whose
    clock ran ahead) taken as the server's now: never trusted to lock a node out."""
    out, capped = cap_cursors(states, database)
    for c in capped:
        log.warning("job %s: its persisted cursor (%s) is ahead of the database server's "
                    "clock (%s), written by a node whose clock ran ahead; taken as the "
                    "server's now", c.job_id, c.cursor.isoformat(), c.capped.isoformat(),
                    extra=ids(c.job_id))
    return out


def recoverable(store: Store, node: str, now: datetime, ttl: timedelta
                ) -> list[ExecutionRecord]:
    """Rows to recover at start-up: this node's own (left by its previous run), and
    single_instance rows of nodes that are dead or stopped and left them (pending
    retries a gracefully stopped node hands to the cluster). Later the liveness thread
    finds those of nodes that die while this one runs."""
    if not store.persistent:
        return []
    rows = {r.id: r for r in store.pending_or_running(node_id=node)}
    dead = [n.node_id for n in store.dead_nodes(now, ttl) if n.node_id != node]
    # Trigger requests this node's previous run (or a dead node) took and never finished:
    # taken again by a live node, once (see Store.release_triggers).
    released = store.release_triggers([node, *dead])
    if released:
        log.info("released %d trigger requests taken by a previous run or a dead node",
                 released)
    if dead:
        rows.update((r.id, r) for r in store.pending_or_running(node_ids=dead)
                    if r.scope_node is None)
    rows.update((r.id, r) for r in store.orphaned_executions() if r.node_id != node)
    return sorted(rows.values(), key=lambda r: (r.scheduled_at, r.id))


def interrupted_ends(store: Store, liveness: Liveness, rows: Sequence[ExecutionRecord],
                     previous: NodeRecord | None, now: datetime, ttl: timedelta
                     ) -> dict[int, datetime]:
    """End times of the interrupted (running) ``rows``: a process group one of them left
    on this host is ended now, before any next attempt; otherwise it ended when its node
    was last known alive (this node's previous run: its last heartbeat)."""
    ends = liveness.end_groups(rows)
    nodes = {n.node_id: n for n in store.dead_nodes(now, ttl)} if rows else {}
    if previous is not None:
        nodes[previous.node_id] = previous
    for r in rows:
        if r.status is ExecutionStatus.RUNNING and r.id not in ends:
            ends[r.id] = liveness.ended_at(r, nodes.get(r.node_id), now)
    return ends


__all__ = ["capped", "interrupted_ends", "node_states", "recoverable", "shared_states"]


def recovered(rows: Sequence[ExecutionRecord]) -> list[RecoveredExecution]:
    """The core's view of executions handed to this node to recover."""
    return [RecoveredExecution(r.id, r.job_id, r.scheduled_at, r.attempt, r.origin, r.status,
                               r.created_at, r.cancel_requested) for r in rows]


def log_next_fires(jobs: Sequence[JobDefinition], now: datetime) -> None:
    """``run -v``: each enabled job's next planned instant, once at start."""
    from cronctl.core.timing import schedule_for

    for job in jobs:
        if job.enabled:
            upcoming = schedule_for(job).next_after(now)
            log.debug("scheduled job=%s next=%s", job.id,
                      "never" if upcoming is None else upcoming.isoformat(),
                      extra=ids(job.id))
