"""What ``cronctl status`` points out (docs/behaviour.md#retention-notifications-and-metrics):
failing jobs (their last occurrence ended ``failed`` or ``dead_letter``), late jobs (``late_after``
passed since a planned instant that nobody started or skipped) and nodes whose notifications
fail."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cronctl.views.common import iso_z

if TYPE_CHECKING:
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import DeliveryFailures, Reads, ScheduleState
    from cronctl.store.records import ExecutionRecord
    from cronctl.views import shapes

_FAILING = ("failed", "dead_letter")
_RECENT = 5  # newest rows read per job: a fire waiting for a slot has a pending row


@dataclass(frozen=True)
class Failing:
    job: str
    status: str
    scheduled_at: datetime
    error: str | None


@dataclass(frozen=True)
class Late:
    job: str
    planned: datetime  # the oldest planned instant not started
    late_after: timedelta


@dataclass(frozen=True)
class Attention:
    failing: Sequence[Failing] = ()
    late: Sequence[Late] = ()
    notify: Sequence[DeliveryFailures] = ()
    # The live nodes (None: unknown). A node's delivery failures are what it recorded
    # while it ran: for a node that is not live now they tell of its last run.
    live: frozenset[str] | None = None

    def _live(self, node_id: str) -> bool:
        return self.live is None or node_id in self.live

    def to_json(self) -> shapes.Attention:
        return {
            "failing": [{"job": f.job, "status": f.status, "scheduled_at": iso_z(f.scheduled_at),
                         "error": f.error} for f in self.failing],
            "late": [{"job": x.job, "planned": iso_z(x.planned),
                      "late_after": x.late_after.total_seconds()} for x in self.late],
            "notify_failing": [{"node": n.node_id, "since": iso_z(n.failing_since),
                                "last_failure_at": iso_z(n.last_failure_at),
                                "failures": n.failures, "last_error": n.last_error,
                                "live": self._live(n.node_id)}
                               for n in self.notify],
        }

    def lines(self) -> list[str]:
        from cronctl.durations import format_duration

        out = [f"failing: {f.job} ({f.status}, planned {iso_z(f.scheduled_at)})"
               for f in self.failing]
        out += [f"late: {x.job} (planned {iso_z(x.planned)}, not started after "
                f"{format_duration(x.late_after)})" for x in self.late]
        out += [(f"notifications failing on {n.node_id} since {iso_z(n.failing_since)}: "
                 if self._live(n.node_id) else
                 f"notifications were failing on {n.node_id} in its last run (it is not live "
                 f"now), since {iso_z(n.failing_since)}: ")
                + f"{n.failures} failed, last {iso_z(n.last_failure_at)}"
                + (f" ({n.last_error})" if n.last_error else "") for n in self.notify]
        return out


def attention(store: Reads, jobs: Sequence[JobDefinition],
              schedules: Sequence[ScheduleState], now: datetime,
              live: Collection[str] | None = None,
              recent: Mapping[str, Sequence[ExecutionRecord]] | None = None) -> Attention:
    """One read of the newest executions of every enabled, tracked job (an untracked job
    leaves nothing to judge it by), plus the failures; ``live``: the ids of the live
    nodes. ``recent``: those newest executions (at least five per job), when the caller
    read them already (the dashboard reads them once for its job rows too)."""
    from cronctl.core import needs_store

    state = {s.job_id: s for s in schedules}
    failing: list[Failing] = []
    late: list[Late] = []
    judged = [job for job in jobs if job.enabled and needs_store(job)]
    if recent is None:
        recent = store.recent_executions([job.id for job in judged], _RECENT)
    for job in judged:
        newest = recent.get(job.id, [])
        last = newest[0] if newest else None
        if last is not None and last.status.value in _FAILING:
            failing.append(Failing(job.id, last.status.value, last.scheduled_at, last.error))
        known = state.get(job.id)
        if job.late_after is None or known is None or known.paused:
            continue
        planned = _oldest_not_started(job, known.cursor, newest)
        if planned is not None and planned + job.late_after <= now:
            late.append(Late(job.id, planned, job.late_after))
    return Attention(failing, late, store.delivery_failures(),
                     None if live is None else frozenset(live))


def _oldest_not_started(job: JobDefinition, cursor: datetime | None,
                        newest: Sequence[ExecutionRecord]) -> datetime | None:
    """The oldest planned instant nobody started, judged by the cursor and the newest rows:
    the instant after the newest one handled, or a fire whose first attempt was written
    ahead and still waits (a slot, a serial group, a parent); None when never handled."""
    from cronctl.core import schedule_for

    marks = [t for t in (cursor, *(r.scheduled_at for r in newest if r.occurrence_began))
             if t is not None]
    waiting = [r.scheduled_at for r in newest if not r.occurrence_began]
    planned = schedule_for(job).next_after(max(marks)) if marks else None
    if waiting:
        oldest = min(waiting)
        planned = oldest if planned is None else min(planned, oldest)
    return planned
