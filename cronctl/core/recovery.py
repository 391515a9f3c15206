"""Recovery of interrupted executions (a dead node's, or this node's before a restart):
the same occurrence runs again, as its next attempt, before the misfire policy looks at
later instants (docs/behaviour.md#durability-and-clusters)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cronctl.core.actions import Action, CloseInterrupted, Decision, RecoveredExecution
from cronctl.core.guards import _RETRY, _SCHEDULED_ORIGINS, Guards
from cronctl.core.state import Job as _Job
from cronctl.core.state import Pending as _Pending
from cronctl.core.timing import retry_delay
from cronctl.jobs.model import ExecutionStatus


class Recovery(Guards):
    """:class:`~cronctl.core.engine.SchedulerCore`'s recovery events."""

    _jobs: dict[str, _Job]

    def recover(self, recovered: Sequence[RecoveredExecution], now: datetime, *,
                mono: float | None = None) -> Decision:
        """Executions of a node whose heartbeat expired: same occurrence, next attempt."""
        self._at(now, mono)
        out: list[Action] = []
        self._recover(recovered, now, out)
        return self._decision(out)

    def _recover(
        self, recovered: Sequence[RecoveredExecution], now: datetime, out: list[Action]
    ) -> None:
        # A pending row (a retry written ahead) supersedes the interrupted attempt before
        # it: that attempt is closed, and the pending one runs.
        ahead = {(r.job_id, r.planned): r.attempt for r in recovered
                 if r.status is ExecutionStatus.PENDING}
        # An occurrence an operator cancelled ends cancelled, whichever of its rows
        # carries the request: none of them runs again.
        cancelled = {(r.job_id, r.planned) for r in recovered if r.cancel_requested}
        for r in sorted(recovered, key=lambda r: (r.planned, r.execution_id)):
            js = self._jobs.get(r.job_id)
            pending = r.status is ExecutionStatus.PENDING
            if (r.job_id, r.planned) in cancelled:
                out.append(CloseInterrupted(r.execution_id, r.job_id, ExecutionStatus.CANCELLED))
                if js is not None and r.origin in _SCHEDULED_ORIGINS and (
                        js.handled is None or r.planned > js.handled):
                    js.handled = r.planned
                continue
            if js is None or (not pending and r.attempt >= js.job.max_attempts):
                out.append(CloseInterrupted(r.execution_id, r.job_id, ExecutionStatus.DEAD_LETTER))
                continue
            if r.origin in _SCHEDULED_ORIGINS and (js.handled is None or r.planned > js.handled):
                js.handled = r.planned  # so the misfire policy starts after it
            # how it ended is unknown: lost, not failed (docs/behaviour.md#durability-and-clusters)
            if not pending:
                out.append(CloseInterrupted(r.execution_id, r.job_id, ExecutionStatus.LOST))
                if ahead.get((r.job_id, r.planned), 0) > r.attempt:
                    continue
                p = _Pending(js, r.planned, now, r.attempt + 1, r.origin, None, r.execution_id)
                self._offer_explicit(p, now, out)
                continue
            # Never started, so its attempt was not used up: run this very attempt (claim
            # the row), after what is left of its backoff.
            p = _Pending(js, r.planned, now, r.attempt, r.origin, row=r.execution_id)
            due = now
            if r.attempt > 1 and r.created_at is not None:
                due = r.created_at + retry_delay(js.job.retry_backoff, r.attempt - 1)
            if due > now:
                p.due = due
                js.in_flight += 1  # in flight through its backoff, like any retry
                self._push(due, _RETRY, js.job.id, 0, p)
            else:
                self._offer_explicit(p, now, out)
