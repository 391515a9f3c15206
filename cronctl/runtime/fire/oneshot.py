"""``cronctl trigger --here``: run one occurrence in this process, without a scheduler.

The same steps as a scheduler's fire path, in line: a ``pending`` row, ``running``,
dispatch, wait (abandoning at the job's ``timeout``), the final status, logs drained;
failed attempts are retried after ``retry_backoff * 2**(attempt-1)`` and the last one
becomes ``dead_letter``, as under ``cronctl run``.

While it waits it behaves like a scheduler toward its one attempt: ``cronctl cancel``
and ``stop`` (set on SIGTERM/SIGINT by the CLI) cancel it (Python: ``is_cancelled()``;
a command: SIGTERM, then SIGKILL after ``kill_timeout``), ending as ``cancelled``. The
process registers as a node of its own while it runs, so that if it dies, a running
``cronctl run`` judges it dead like any node (its process on SQLite, its lock on
PostgreSQL) and recovers its row; its rows are cluster-wide (not scoped to the node),
as every other node's recovery expects.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronctl import processes
from cronctl.core import retry_delay
from cronctl.dispatch.base import Dispatcher, DispatchRequest, ExecutionHandle, Outcome
from cronctl.dispatch.logbuffer import MAX_LINES_PER_EXECUTION, LogFlusher, ProcessLogSink
from cronctl.errors import first_line
from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Mode, Origin
from cronctl.runtime.fire.firing import is_tracked
from cronctl.store.base import Store

log = logging.getLogger("cronctl.runtime")
POLL = 0.2  # seconds between looks at the stop flag
CANCEL_POLL = 0.5  # seconds between cancel-request polls (as a scheduler's)
HEARTBEAT = timedelta(seconds=5)


@dataclass(frozen=True)
class OneShotResult:
    job_id: str
    occurrence_id: str
    execution_id: int | None
    attempt: int
    status: ExecutionStatus
    error: str | None
    retryable: bool = True  # False: another attempt would fail the same way


@dataclass
class _Context:
    job: JobDefinition
    store: Store
    dispatcher: Dispatcher
    flusher: LogFlusher
    node: str
    occ: str
    planned: datetime
    clock: Callable[[], datetime]
    stop: threading.Event
    beat: float
    registered: bool = False


def run_here(
    job: JobDefinition,
    store: Store,
    *,
    node_id: str | None = None,
    dispatcher: Dispatcher | None = None,
    clock: Callable[[], datetime] | None = None,
    stop: threading.Event | None = None,
    heartbeat_interval: timedelta = HEARTBEAT,
    max_log_lines: int = MAX_LINES_PER_EXECUTION,
) -> OneShotResult:
    """Run ``job`` once, here. ``stop`` set (by a signal handler) cancels the attempt and
    any retry; the result is then ``cancelled``."""
    clock = clock or (lambda: datetime.now(UTC))
    node = node_id or f"{socket.gethostname()}-here-{os.getpid()}"
    own = dispatcher is None
    if dispatcher is None:
        from cronctl.dispatch import default_dispatcher

        dispatcher = default_dispatcher(1, max_log_lines=max_log_lines)
    planned = clock()
    beat = heartbeat_interval.total_seconds()
    if store.beat_interval is not None:
        beat = min(beat, store.beat_interval)
    flusher = LogFlusher(store, clock=clock)
    ctx = _Context(job, store, dispatcher, flusher, node, occurrence_id(job.id, planned),
                   planned, clock, stop or threading.Event(), beat)
    try:
        try:
            dispatcher.resolve(job)
        except Exception as exc:
            return OneShotResult(job.id, ctx.occ, None, 1, ExecutionStatus.FAILED,
                                 f"target cannot be resolved: {first_line(exc)}")
        if is_tracked(job) and store.persistent:
            store.register_node(node, socket.gethostname(), os.getpid(), clock(),
                                ttl=heartbeat_interval * 3,
                                process_start=processes.identity(os.getpid()))
            ctx.registered = True
        return _attempts(ctx)
    finally:
        ctx.flusher.drain_all(time.monotonic() + 5.0)
        shutdown = getattr(dispatcher, "shutdown", None)
        if own and callable(shutdown):
            shutdown(False)
        if ctx.registered:
            try:
                store.unregister_node(node)
            except Exception as exc:
                log.warning("could not unregister %s: %s", node, first_line(exc))


def _attempts(ctx: _Context) -> OneShotResult:
    job, store = ctx.job, ctx.store
    attempt = 1
    while True:
        result = _attempt(ctx, attempt)
        if result is None:
            return OneShotResult(job.id, ctx.occ, None, attempt, ExecutionStatus.FAILED,
                                 "not run: this occurrence already has this attempt")
        if result.status not in (ExecutionStatus.FAILED, ExecutionStatus.ABANDONED):
            return result
        if attempt >= job.max_attempts or not result.retryable:
            if result.execution_id is not None:
                store.transition(result.execution_id, result.status,
                                 ExecutionStatus.DEAD_LETTER)
            return OneShotResult(job.id, ctx.occ, result.execution_id, attempt,
                                 ExecutionStatus.DEAD_LETTER, result.error)
        if _wait(ctx, retry_delay(job.retry_backoff, attempt).total_seconds()):
            return OneShotResult(job.id, ctx.occ, result.execution_id, attempt,
                                 result.status, f"{result.error}; no retry: interrupted")
        attempt += 1


def _wait(ctx: _Context, seconds: float) -> bool:
    """Wait ``seconds`` (monotonic), heartbeating; True if ``stop`` was set."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if ctx.stop.wait(min(left, ctx.beat)):
            return True
        _heartbeat(ctx)
    return ctx.stop.is_set()


def _heartbeat(ctx: _Context) -> None:
    if not ctx.registered:
        return
    try:
        ctx.store.heartbeat(ctx.node, ctx.clock(), host=socket.gethostname(), pid=os.getpid())
    except Exception as exc:
        log.debug("heartbeat failed: %s", first_line(exc))


def _attempt(ctx: _Context, attempt: int) -> OneShotResult | None:
    job, store, clock = ctx.job, ctx.store, ctx.clock
    execution_id: int | None = None
    token: int | None = None
    if is_tracked(job) and store.persistent:
        if job.mode is Mode.SINGLE_INSTANCE:
            token = store.next_fencing_token(job.id)
        execution_id = store.try_insert_execution(
            job_id=job.id, occurrence_id=ctx.occ, scheduled_at=ctx.planned, attempt=attempt,
            origin=Origin.MANUAL, node_id=ctx.node, scope_node=None, fencing_token=token,
            target=str(job.target), now=clock())
        if execution_id is None:
            return None
        store.transition(execution_id, ExecutionStatus.PENDING, ExecutionStatus.RUNNING,
                         started_at=clock())
    sink = (ctx.flusher.sink_for(execution_id) if execution_id is not None
            else ProcessLogSink(job.id))
    done = threading.Event()
    outcomes: list[Outcome] = []

    def on_done(outcome: Outcome) -> None:
        outcomes.append(outcome)
        done.set()

    def spawned(pgid: int, ident: str | None) -> None:
        if execution_id is not None:
            store.record_process(execution_id, pgid, ident)

    request = DispatchRequest(job, ctx.occ, ctx.planned, attempt, Origin.MANUAL, execution_id,
                              token, on_spawn=spawned)
    try:
        handle: ExecutionHandle | None = ctx.dispatcher.start(request, sink, on_done)
    except Exception as exc:
        outcomes.append(Outcome(ExecutionStatus.FAILED, f"dispatch failed: {first_line(exc)}"))
        done.set()
        handle = None
    outcome = _watch(ctx, execution_id, handle, done, outcomes)
    if execution_id is not None:
        if not store.transition(execution_id, ExecutionStatus.RUNNING, outcome.status,
                                error=outcome.error, finished_at=clock(),
                                fencing_token=token):
            log.warning("fenced: job=%s exec=%s ended %s here, but the store refused that "
                        "final status (recovered elsewhere)", job.id, execution_id,
                        outcome.status.value)
        ctx.flusher.drain(execution_id)
    return OneShotResult(job.id, ctx.occ, execution_id, attempt, outcome.status, outcome.error,
                         outcome.retryable)


def _cancel_requested(store: Store, execution_id: int) -> bool:
    try:
        return bool(store.cancel_requested([execution_id]))
    except Exception as exc:  # the store is away for a moment: ask again later
        log.debug("cancel poll failed: %s", first_line(exc))
        return False


def _watch(ctx: _Context, execution_id: int | None, handle: ExecutionHandle | None,
           done: threading.Event, outcomes: list[Outcome]) -> Outcome:
    """Wait for the attempt: abandon it at its timeout; cancel it on ``cancel`` or
    ``stop`` (a handler that ignores the cancel is given up after ``kill_timeout``)."""
    job = ctx.job
    start = time.monotonic()
    timeout = job.timeout.total_seconds() if job.timeout else None
    next_poll = next_beat = start
    cancelled: str | None = None
    give_up = float("inf")
    while not done.wait(POLL):
        mono = time.monotonic()
        if timeout is not None and mono - start >= timeout and handle is not None:
            handle.abandon()
            outcomes.append(Outcome(ExecutionStatus.ABANDONED, f"timed out after {job.timeout}"))
            return outcomes[-1]
        if cancelled is None:
            if ctx.stop.is_set():
                cancelled = "interrupted"
            elif execution_id is not None and mono >= next_poll:
                next_poll = mono + CANCEL_POLL
                if _cancel_requested(ctx.store, execution_id):
                    cancelled = "cancelled"
            if cancelled is not None and handle is not None:
                handle.cancel()
                give_up = mono + job.kill_timeout.total_seconds() + 1.0
        if mono >= give_up:
            return Outcome(ExecutionStatus.CANCELLED,
                           f"{cancelled}; the handler did not stop within kill_timeout")
        if mono >= next_beat:
            next_beat = mono + ctx.beat
            _heartbeat(ctx)
    outcome = outcomes[0]
    if cancelled is not None and outcome.status is not ExecutionStatus.CANCELLED and \
            outcome.status is not ExecutionStatus.SUCCEEDED:
        return Outcome(ExecutionStatus.CANCELLED, f"{cancelled}: {outcome.error}")
    if cancelled == "interrupted" and outcome.status is ExecutionStatus.CANCELLED:
        return Outcome(ExecutionStatus.CANCELLED, "interrupted")
    return outcome
