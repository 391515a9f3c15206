"""The in-memory store (``database = "none"``): the same Protocol over plain dicts under
one lock. Nothing survives the process; only this process sees it. No SQLAlchemy here."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from cronctl.jobs.model import ExecutionStatus, JobDefinition, Origin
from cronctl.store.base import (
    ExecutionRecord,
    GuardLock,
    LogEntry,
    LogLine,
    NewExecution,
    NodeIdInUse,
    NodeRecord,
    ScheduleState,
    Transition,
    TriggerRequest,
    require_aware,
    statuses,
)
from cronctl.store.memlocks import LockTable
from cronctl.store.snapshot import definition_snapshot, dumps

_LIVE = (ExecutionStatus.PENDING, ExecutionStatus.RUNNING)


def level_name(level: str | int) -> str:
    """``logging.INFO`` or ``"info"`` → ``"INFO"``."""
    if isinstance(level, int):
        return logging.getLevelName(level)
    return level.upper()


def _opt(value: datetime | None, what: str) -> datetime | None:
    return None if value is None else require_aware(value, what)


def _now(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else require_aware(now, "now")


def history_key(rec: ExecutionRecord) -> tuple[datetime, int]:
    return (rec.scheduled_at, rec.id)


class MemoryStore:
    """Every operation takes one lock, which makes each atomic like a transaction."""

    kind = "memory"
    persistent = False
    display_url = "none"

    def __init__(self, *, node_id: str = "") -> None:
        self.node_id = node_id
        self._lock = threading.RLock()  # re-entrant: the batch methods reuse single ones
        self._schedules: dict[str, ScheduleState] = {}
        self._executions: dict[int, ExecutionRecord] = {}
        self._keys: set[tuple[str, str, str, int]] = set()
        self._logs: dict[int, list[LogLine]] = {}
        self._triggers: dict[int, TriggerRequest] = {}
        self._trigger_keys: set[tuple[str, datetime]] = set()
        self._nodes: dict[str, NodeRecord] = {}
        self._guards = LockTable()
        self._next_id = 1
        self._next_trigger = 1

    def close(self) -> None:
        return None

    # --- schedules -----------------------------------------------------------------

    def _schedule(self, job_id: str) -> ScheduleState:
        state = self._schedules.get(job_id)
        if state is None:
            state = ScheduleState(job_id, {}, None, False, 0, None)
        return state

    def save_definitions(
        self, jobs: Sequence[JobDefinition], *, now: datetime | None = None
    ) -> None:
        at = _now(now)
        with self._lock:
            for job in jobs:
                snap: dict[str, Any] = json.loads(dumps(definition_snapshot(job)))
                self._schedules[job.id] = replace(
                    self._schedule(job.id), definition=snap, updated_at=at
                )

    def get_schedule(self, job_id: str) -> ScheduleState | None:
        with self._lock:
            return self._schedules.get(job_id)

    def list_schedules(self) -> list[ScheduleState]:
        with self._lock:
            return [self._schedules[k] for k in sorted(self._schedules)]

    def advance_cursor(self, job_id: str, planned_at: datetime) -> datetime:
        planned = require_aware(planned_at, "planned_at")
        with self._lock:
            state = self._schedule(job_id)
            if state.cursor is None or state.cursor < planned:
                state = replace(state, cursor=planned)
            self._schedules[job_id] = state
            assert state.cursor is not None
            return state.cursor

    def advance_cursors(self, cursors: Mapping[str, datetime]) -> None:
        planned = {job_id: require_aware(at, "planned_at") for job_id, at in cursors.items()}
        with self._lock:
            for job_id, at in planned.items():
                state = self._schedule(job_id)
                if state.cursor is None or state.cursor < at:
                    state = replace(state, cursor=at)
                self._schedules[job_id] = state

    def job_states(self) -> dict[str, tuple[datetime | None, bool]]:
        with self._lock:
            return {k: (s.cursor, s.paused) for k, s in self._schedules.items()}

    def paused_job_ids(self) -> set[str]:
        with self._lock:
            return {k for k, s in self._schedules.items() if s.paused}

    def set_paused(self, job_id: str, paused: bool) -> None:
        with self._lock:
            self._schedules[job_id] = replace(self._schedule(job_id), paused=paused)

    def next_fencing_token(self, job_id: str) -> int:
        with self._lock:
            state = self._schedule(job_id)
            state = replace(state, fencing=state.fencing + 1)
            self._schedules[job_id] = state
            return state.fencing

    # --- executions ----------------------------------------------------------------

    def try_insert_execution(
        self,
        *,
        job_id: str,
        occurrence_id: str,
        scheduled_at: datetime,
        attempt: int,
        origin: Origin,
        node_id: str,
        scope_node: str | None,
        fencing_token: int | None = None,
        target: str = "",
        status: ExecutionStatus = ExecutionStatus.PENDING,
        started_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int | None:
        key = (job_id, occurrence_id, scope_node or "", attempt)
        rec_scheduled = require_aware(scheduled_at, "scheduled_at")
        rec_started = _opt(started_at, "started_at")
        created = _now(now)
        with self._lock:
            if key in self._keys:
                return None
            self._keys.add(key)
            new_id = self._next_id
            self._next_id += 1
            self._executions[new_id] = ExecutionRecord(
                id=new_id,
                job_id=job_id,
                occurrence_id=occurrence_id,
                scheduled_at=rec_scheduled,
                attempt=attempt,
                origin=Origin(origin),
                status=ExecutionStatus(status),
                node_id=node_id,
                scope_node=scope_node,
                fencing_token=fencing_token,
                target=target,
                created_at=created,
                started_at=rec_started,
            )
            return new_id

    def insert_executions(self, rows: Sequence[NewExecution]) -> list[int | None]:
        with self._lock:  # re-entrant: the batch is atomic as a whole
            return [self.try_insert_execution(
                job_id=r.job_id, occurrence_id=r.occurrence_id, scheduled_at=r.scheduled_at,
                attempt=r.attempt, origin=r.origin, node_id=r.node_id,
                scope_node=r.scope_node, fencing_token=r.fencing_token, target=r.target,
                status=r.status, started_at=r.started_at, now=r.created_at,
            ) for r in rows]

    def claim_execution(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime,
    ) -> bool:
        started = require_aware(started_at, "started_at")
        with self._lock:
            rec = self._executions.get(execution_id)
            if rec is None or rec.status is not ExecutionStatus.PENDING:
                return False
            self._executions[execution_id] = replace(
                rec, status=ExecutionStatus.RUNNING, node_id=node_id,
                fencing_token=fencing_token, started_at=started)
            return True

    def insert_guarded(self, rows: Sequence[NewExecution]) -> list[int | str | None]:
        out: list[int | str | None] = []
        with self._lock:
            for r in rows:
                held = self._guards.held(r.locks) if r.locks else None
                if held is not None:
                    key = (r.job_id, r.occurrence_id, r.scope_node or "", r.attempt)
                    out.append(None if key in self._keys else held)
                    continue
                [new_id] = self.insert_executions([r])
                if new_id is not None and r.locks:
                    self._guards.take(r.locks, new_id, r.node_id, _now(r.created_at))
                out.append(new_id)
        return out

    def claim_guarded(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime, locks: Sequence[str],
    ) -> bool | str:
        with self._lock:
            rec = self._executions.get(execution_id)
            if rec is None or rec.status is not ExecutionStatus.PENDING:
                return False
            held = self._guards.held(locks)
            if held is not None:
                return held
            self._guards.take(locks, execution_id, node_id, require_aware(started_at, "at"))
            return self.claim_execution(execution_id, node_id=node_id,
                                        fencing_token=fencing_token, started_at=started_at)

    def guard_locks(self) -> list[GuardLock]:
        with self._lock:
            return self._guards.all()

    def release_locks(self, node_id: str) -> int:
        with self._lock:
            return self._guards.release_nodes(drop=node_id)

    def release_stale_locks(self, now: datetime, ttl: timedelta) -> int:
        live = [n.node_id for n in self.live_nodes(now, ttl)]
        with self._lock:
            return self._guards.release_nodes(live)

    def orphaned_executions(self) -> list[ExecutionRecord]:
        with self._lock:
            return sorted((r for r in self._executions.values()
                           if r.status in _LIVE and r.scope_node is None
                           and r.node_id not in self._nodes), key=history_key)

    def transitions(self, changes: Sequence[Transition]) -> list[bool]:
        with self._lock:
            return [self.transition(c.execution_id, c.expected, c.new, error=c.error,
                                    started_at=c.started_at, finished_at=c.finished_at)
                    for c in changes]

    def transition(
        self,
        execution_id: int,
        expected: ExecutionStatus | Collection[ExecutionStatus],
        new: ExecutionStatus,
        *,
        error: str | None = None,
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
    ) -> bool:
        allowed = statuses(expected)
        changes: dict[str, Any] = {"status": new}
        if error is not None:
            changes["error"] = error
        if started_at is not None:
            changes["started_at"] = require_aware(started_at, "started_at")
        if finished_at is not None:
            changes["finished_at"] = require_aware(finished_at, "finished_at")
        with self._lock:
            rec = self._executions.get(execution_id)
            if rec is None or rec.status not in allowed:
                return False
            self._executions[execution_id] = replace(rec, **changes)
            if new not in _LIVE:
                self._guards.release_executions((execution_id,))
            return True

    def get_execution(self, execution_id: int) -> ExecutionRecord | None:
        with self._lock:
            return self._executions.get(execution_id)

    def list_executions(
        self,
        *,
        job_id: str | None = None,
        status: ExecutionStatus | Collection[ExecutionStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = 50,
    ) -> list[ExecutionRecord]:
        wanted = None if status is None else set(statuses(status))
        lo = _opt(since, "since")
        hi = _opt(until, "until")
        with self._lock:
            rows = [
                r
                for r in self._executions.values()
                if (job_id is None or r.job_id == job_id)
                and (wanted is None or r.status in wanted)
                and (lo is None or r.scheduled_at >= lo)
                and (hi is None or r.scheduled_at <= hi)
            ]
        rows.sort(key=history_key, reverse=True)
        return rows if limit is None else rows[:limit]

    def latest_executions(self, job_ids: Collection[str]) -> dict[str, ExecutionRecord]:
        wanted = set(job_ids)
        out: dict[str, ExecutionRecord] = {}
        with self._lock:
            for rec in self._executions.values():
                if rec.job_id not in wanted:
                    continue
                best = out.get(rec.job_id)
                if best is None or history_key(rec) > history_key(best):
                    out[rec.job_id] = rec
        return out

    def executions_of_occurrence(self, job_id: str, occurrence_id: str) -> list[ExecutionRecord]:
        with self._lock:
            rows = [
                r
                for r in self._executions.values()
                if r.job_id == job_id and r.occurrence_id == occurrence_id
            ]
        return sorted(rows, key=lambda r: (r.attempt, r.id))

    def pending_or_running(
        self,
        *,
        node_id: str | None = None,
        job_ids: Collection[str] | None = None,
    ) -> list[ExecutionRecord]:
        live = (ExecutionStatus.PENDING, ExecutionStatus.RUNNING)
        jobs = None if job_ids is None else set(job_ids)
        with self._lock:
            rows = [
                r
                for r in self._executions.values()
                if r.status in live
                and (node_id is None or r.node_id == node_id)
                and (jobs is None or r.job_id in jobs)
            ]
        return sorted(rows, key=history_key)

    def request_cancel(self, execution_id: int) -> bool:
        with self._lock:
            rec = self._executions.get(execution_id)
            if rec is None or rec.status.is_final:
                return False
            self._executions[execution_id] = replace(rec, cancel_requested=True)
            return True

    def cancel_requested(self, execution_ids: Collection[int]) -> set[int]:
        with self._lock:
            return {
                i
                for i in execution_ids
                if (rec := self._executions.get(i)) is not None and rec.cancel_requested
            }

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        lines = [
            (eid, require_aware(at, "log time"), level_name(level), msg)
            for eid, at, level, msg in batch
        ]
        with self._lock:
            for eid, at, level, msg in lines:
                if eid not in self._executions:
                    continue
                log = self._logs.setdefault(eid, [])
                log.append(LogLine(eid, len(log) + 1, at, level, msg))

    def read_logs(
        self, execution_id: int, *, after_seq: int = 0, limit: int | None = None
    ) -> list[LogLine]:
        with self._lock:
            lines = [ln for ln in self._logs.get(execution_id, []) if ln.seq > after_seq]
        return lines if limit is None else lines[:limit]

    def record_progress(
        self, execution_id: int, done: float, total: float | None, message: str | None
    ) -> None:
        with self._lock:
            rec = self._executions.get(execution_id)
            if rec is not None:
                self._executions[execution_id] = replace(
                    rec, progress_done=done, progress_total=total, progress_message=message
                )

    # --- requests --------------------------------------------------------------------

    def enqueue_trigger(
        self,
        job_id: str,
        origin: Origin = Origin.MANUAL,
        *,
        scheduled_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int | None:
        planned = _opt(scheduled_at, "scheduled_at")
        at = _now(now)
        with self._lock:
            if planned is not None:
                if (job_id, planned) in self._trigger_keys:
                    return None
                self._trigger_keys.add((job_id, planned))
            rid = self._next_trigger
            self._next_trigger += 1
            self._triggers[rid] = TriggerRequest(
                rid,
                job_id,
                Origin(origin),
                planned,
                at,
            )
            return rid

    def take_triggers(
        self,
        node_id: str,
        *,
        job_ids: Collection[str] | None = None,
        limit: int = 100,
        now: datetime | None = None,
    ) -> list[TriggerRequest]:
        at = _now(now)
        jobs = None if job_ids is None else set(job_ids)
        taken: list[TriggerRequest] = []
        with self._lock:
            for rid in sorted(self._triggers):
                if len(taken) >= limit:
                    break
                req = self._triggers[rid]
                if req.taken_by is not None or (jobs is not None and req.job_id not in jobs):
                    continue
                req = replace(req, taken_by=node_id, taken_at=at)
                self._triggers[rid] = req
                taken.append(req)
        return taken

    def complete_trigger(
        self, request_id: int, *, execution_id: int | None = None, error: str | None = None
    ) -> None:
        with self._lock:
            req = self._triggers.get(request_id)
            if req is not None:
                self._triggers[request_id] = replace(
                    req, execution_id=execution_id, error=error, done=True
                )

    def get_trigger(self, request_id: int) -> TriggerRequest | None:
        with self._lock:
            return self._triggers.get(request_id)

    # --- nodes ---------------------------------------------------------------------

    def register_node(
        self, node_id: str, host: str, pid: int, started_at: datetime, *, ttl: timedelta
    ) -> None:
        start = require_aware(started_at, "started_at")
        with self._lock:
            old = self._nodes.get(node_id)
            if (
                old is not None
                and old.heartbeat_at > start - ttl
                and (old.host, old.pid) != (host, pid)
            ):
                raise NodeIdInUse(node_id_in_use_message(old))
            self._nodes[node_id] = NodeRecord(node_id, host, pid, start, start)

    def heartbeat(
        self, node_id: str, at: datetime, *, host: str | None = None, pid: int | None = None
    ) -> bool:
        when = require_aware(at, "at")
        with self._lock:
            old = self._nodes.get(node_id)
            if old is None or (host is not None and old.host != host):
                return False
            if pid is not None and old.pid != pid:
                return False
            self._nodes[node_id] = replace(old, heartbeat_at=when)
            return True

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        cutoff = require_aware(now, "now") - ttl
        with self._lock:
            return sorted(
                (n for n in self._nodes.values() if n.heartbeat_at > cutoff),
                key=lambda n: n.node_id,
            )

    def expired_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        cutoff = require_aware(now, "now") - ttl
        with self._lock:
            return sorted(
                (n for n in self._nodes.values() if n.heartbeat_at <= cutoff),
                key=lambda n: n.node_id,
            )

    def unregister_node(self, node_id: str) -> None:
        with self._lock:
            self._nodes.pop(node_id, None)


def node_id_in_use_message(old: NodeRecord) -> str:
    return (
        f"node id {old.node_id!r} is in use by a live scheduler (host {old.host}, "
        f"pid {old.pid}, last heartbeat {old.heartbeat_at.isoformat()}): stop it, or give "
        "this scheduler another node_id"
    )


__all__ = ["MemoryStore", "level_name", "node_id_in_use_message"]
