"""``cronctl trigger --here``: run one occurrence in this process, without a scheduler.

The same steps as a scheduler's fire path, in line: a ``pending`` row, ``running``,
dispatch, wait (abandoning at the job's ``timeout``), the final status, logs drained;
failed attempts are retried after ``retry_backoff * 2**(attempt-1)`` and the last one
becomes ``dead_letter``, as under ``cronctl run``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from cronctl.dispatch.base import Dispatcher, DispatchRequest, Outcome
from cronctl.dispatch.logbuffer import MAX_LINES_PER_EXECUTION, LogFlusher, ProcessLogSink
from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Mode, Origin
from cronctl.runtime.firing import is_tracked
from cronctl.runtime.records import first_line
from cronctl.store.base import Store


@dataclass(frozen=True)
class OneShotResult:
    job_id: str
    occurrence_id: str
    execution_id: int | None
    attempt: int
    status: ExecutionStatus
    error: str | None


def run_here(
    job: JobDefinition,
    store: Store,
    *,
    node_id: str | None = None,
    dispatcher: Dispatcher | None = None,
    clock: Callable[[], datetime] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_log_lines: int = MAX_LINES_PER_EXECUTION,
) -> OneShotResult:
    clock = clock or (lambda: datetime.now(UTC))
    node = node_id or f"{socket.gethostname()}-trigger"
    own = dispatcher is None
    if dispatcher is None:
        from cronctl.dispatch import default_dispatcher

        dispatcher = default_dispatcher(1)
    planned = clock()
    occ = occurrence_id(job.id, planned)
    flusher = LogFlusher(store, clock=clock, max_per_execution=max_log_lines)
    try:
        try:
            dispatcher.resolve(job)
        except Exception as exc:
            return OneShotResult(job.id, occ, None, 1, ExecutionStatus.FAILED,
                                 f"target cannot be resolved: {first_line(exc)}")
        attempt = 1
        while True:
            result = _attempt(job, store, dispatcher, flusher, node, occ, planned, attempt,
                              clock)
            if result is None:
                return OneShotResult(job.id, occ, None, attempt, ExecutionStatus.FAILED,
                                     "not run: this occurrence already has this attempt")
            if result.status not in (ExecutionStatus.FAILED, ExecutionStatus.ABANDONED):
                return result
            if attempt >= job.max_attempts:
                if result.execution_id is not None:
                    store.transition(result.execution_id, result.status,
                                     ExecutionStatus.DEAD_LETTER)
                return OneShotResult(job.id, occ, result.execution_id, attempt,
                                     ExecutionStatus.DEAD_LETTER, result.error)
            sleep((job.retry_backoff * (2 ** (attempt - 1))).total_seconds())
            attempt += 1
    finally:
        flusher.drain_all(time.monotonic() + 5.0)
        shutdown = getattr(dispatcher, "shutdown", None)
        if own and callable(shutdown):
            shutdown(False)


def _attempt(job: JobDefinition, store: Store, dispatcher: Dispatcher, flusher: LogFlusher,
             node: str, occ: str, planned: datetime, attempt: int,
             clock: Callable[[], datetime]) -> OneShotResult | None:
    execution_id: int | None = None
    token: int | None = None
    if is_tracked(job) and store.persistent:
        single = job.mode is Mode.SINGLE_INSTANCE
        if single:
            token = store.next_fencing_token(job.id)
        execution_id = store.try_insert_execution(
            job_id=job.id, occurrence_id=occ, scheduled_at=planned, attempt=attempt,
            origin=Origin.MANUAL, node_id=node, scope_node=None if single else node,
            fencing_token=token, target=str(job.target), now=clock())
        if execution_id is None:
            return None
        store.transition(execution_id, ExecutionStatus.PENDING, ExecutionStatus.RUNNING,
                         started_at=clock())
    sink = flusher.sink_for(execution_id) if execution_id is not None else ProcessLogSink(job.id)
    done = threading.Event()
    outcomes: list[Outcome] = []

    def on_done(outcome: Outcome) -> None:
        outcomes.append(outcome)
        done.set()

    request = DispatchRequest(job, occ, planned, attempt, Origin.MANUAL, execution_id, token)
    try:
        handle = dispatcher.start(request, sink, on_done)
    except Exception as exc:
        outcomes.append(Outcome(ExecutionStatus.FAILED, f"dispatch failed: {first_line(exc)}"))
        done.set()
        handle = None
    timeout = job.timeout.total_seconds() if job.timeout else None
    try:
        if not done.wait(timeout):
            assert handle is not None
            handle.abandon()
            outcomes.append(Outcome(ExecutionStatus.ABANDONED, f"timed out after {job.timeout}"))
    except KeyboardInterrupt:
        if handle is not None:
            handle.cancel()
        done.wait(job.kill_timeout.total_seconds() + 1)
        outcomes.append(Outcome(ExecutionStatus.CANCELLED, "interrupted"))
    outcome = outcomes[-1] if outcomes[-1].status is ExecutionStatus.ABANDONED else outcomes[0]
    if execution_id is not None:
        store.transition(execution_id, ExecutionStatus.RUNNING, outcome.status,
                         error=outcome.error, finished_at=clock())
        flusher.drain(execution_id)
    return OneShotResult(job.id, occ, execution_id, attempt, outcome.status, outcome.error)
