"""``status`` and ``GET /api/v1/status``: live nodes, pending and running executions, next
fires; failing and late jobs and failing notifications (:mod:`cronctl.views.attention`).

A node is live while its last heartbeat is younger than three heartbeat intervals, the
same TTL the schedulers themselves use to decide that a node is gone (see
``cronctl/runtime/scheduler.py``). With ``database = "none"`` there is no shared state:
nodes and executions are empty, the next fires are still shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from cronctl.views.attention import Attention, attention
from cronctl.views.common import iso_z

if TYPE_CHECKING:
    from cronctl.cgroups import Containment
    from cronctl.config import Config
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import ExecutionRecord, NodeRecord, Reads
    from cronctl.store.records import TriggerRequest
    from cronctl.views import shapes


HEARTBEAT_TTL_FACTOR = 3  # = runtime/scheduler.py: ttl = heartbeat_interval * 3
SHOWN_REQUESTS = 100  # queued requests listed (a replay of a long window queues many)


@dataclass(frozen=True)
class NextFire:
    job: str
    at: datetime | None  # None: never fires again (within the 4-year horizon)


@dataclass(frozen=True)
class Status:
    database: str  # display URL (password redacted) or "none"
    shared: bool  # False for database = "none": nodes and executions are not knowable
    nodes: Sequence[NodeRecord]
    active: Sequence[ExecutionRecord]
    next: Sequence[NextFire]
    paused: Sequence[str]
    disabled: Sequence[str]
    warnings: Sequence[str] = field(default=())
    attention: Attention = field(default=Attention())  # failing, late, notifications
    # trigger/replay requests no scheduler has acted on yet (they wait for one)
    queued: Sequence[TriggerRequest] = field(default=())
    # What ends a command's processes on this host (a cgroup per attempt, or the process
    # group): cronctl/cgroups.py. None for a Status built without it.
    containment: Containment | None = None

    def to_json(self) -> shapes.Status:
        return {
            "database": self.database,
            "shared_state": self.shared,
            "nodes": [{"id": n.node_id, "host": n.host, "pid": n.pid,
                       "started_at": iso_z(n.started_at),
                       "heartbeat_at": iso_z(n.heartbeat_at)} for n in self.nodes],
            "running": [_execution_json(r) for r in self.active],
            "queued": [_request_json(r) for r in self.queued],
            "next": [{"job": f.job, "next_fire": iso_z(f.at)} for f in self.next],
            "paused": list(self.paused),
            "disabled": list(self.disabled),
            "containment": None if self.containment is None else containment_json(self.containment),
            **self.attention.to_json(),
        }


def containment_json(containment: Containment) -> shapes.Containment:
    return {"mechanism": containment.mechanism, "cgroup": containment.base,
            "reason": containment.reason}


def _execution_json(record: ExecutionRecord) -> shapes.Running:
    progress: shapes.Progress | None = None
    if record.progress_done is not None:
        progress = {"done": record.progress_done, "total": record.progress_total,
                    "message": record.progress_message}
    return {"id": record.id, "job": record.job_id, "status": record.status.value,
            "node": record.node_id, "scheduled_at": iso_z(record.scheduled_at),
            "started_at": iso_z(record.started_at), "attempt": record.attempt,
            "origin": record.origin.value, "progress": progress,
            "cancel_requested": record.cancel_requested}


def _request_json(request: TriggerRequest) -> shapes.Queued:
    return {"id": request.id, "job": request.job_id, "origin": request.origin.value,
            "scheduled_at": iso_z(request.scheduled_at) if request.scheduled_at else None,
            "requested_at": iso_z(request.requested_at), "taken_by": request.taken_by or None,
            "waiting_on_parents": request.taken_by == "" and not request.done}


def next_fires(jobs: Sequence[JobDefinition], paused: set[str], now: datetime
               ) -> list[NextFire]:
    """The next fire of every enabled, unpaused job (the next instant its calendars let
    run): soonest first, never-firing last."""
    from cronctl.core.calendars import next_run
    from cronctl.jobs.checks import job_schedule

    fires = [NextFire(job.id, next_run(job, job_schedule(job), now))
             for job in jobs if job.enabled and job.id not in paused]
    return sorted(fires, key=lambda f: (f.at is None, f.at or now, f.job))


def collect(config: Config, store: Reads | None, jobs: Sequence[JobDefinition],
            now: datetime, warnings: Sequence[str] = ()) -> Status:
    """What ``status`` shows. ``store`` is ``None`` when there is no state (yet)."""
    nodes: list[NodeRecord] = []
    active: list[ExecutionRecord] = []
    paused: set[str] = set()
    seen = Attention()
    queued: list[TriggerRequest] = []
    if store is not None:
        nodes = store.live_nodes(now, config.heartbeat_interval * HEARTBEAT_TTL_FACTOR)
        active = store.pending_or_running()
        schedules = store.list_schedules()
        paused = {s.job_id for s in schedules if s.paused}
        seen = attention(store, jobs, schedules, now, live=[n.node_id for n in nodes])
        queued = store.waiting_triggers(SHOWN_REQUESTS)
    known = {job.id for job in jobs}
    return Status(
        database="none" if config.in_memory else config.database_display,
        shared=not config.in_memory,
        nodes=nodes,
        active=active,
        next=next_fires(jobs, paused, now),
        paused=sorted(paused & known),
        disabled=sorted(job.id for job in jobs if not job.enabled),
        warnings=warnings,
        attention=seen,
        queued=queued,
        containment=containment(config.cgroup, nodes),
    )


def containment(setting: str, nodes: Sequence[NodeRecord]) -> Containment:
    """What ``[scheduler] cgroup = setting`` gives a scheduler on this host: the first live
    node on this host is looked at (its cgroup), else a scheduler started from here."""
    import socket

    from cronctl import cgroups, processes

    host = socket.gethostname()
    for node in nodes:
        if node.host == host and processes.alive(node.pid, node.process_start):
            return cgroups.detect(setting, node.pid)
    return cgroups.detect(setting, writer=False)  # (status may run as another user)
