"""Carrying out the core's actions: the durable fire path, dispatch, final statuses.

Runs on the scheduler thread. For a tracked fire, in order: (single_instance) a fencing
token; insert the ``running`` row together with its guard locks (single_instance overlap,
serial group: :mod:`cronctl.runtime.fire.records`) in the wake's one transaction (for
single_instance this insert IS the election: a loser skips silently); dispatch; only
then queue the cursor write. Final
statuses, log drains and cursor batches go to the I/O thread so a slow store delays
no fire. Whatever throws on the way releases the fire's guards in the core.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from cronctl.core import (
    Abandon,
    Action,
    AdvanceCursor,
    CloseInterrupted,
    DeadLetter,
    Decision,
    Enqueue,
    ExecKey,
    Finish,
    Fire,
    Missed,
    Retry,
    SchedulerCore,
    Skip,
    SkipReason,
    needs_store,
)
from cronctl.dispatch.base import Dispatcher, DispatchRequest, LogSink, Outcome
from cronctl.dispatch.logbuffer import LogFlusher, ProcessLogSink
from cronctl.dispatch.relay import Staged
from cronctl.errors import first_line
from cronctl.jobs.model import ExecutionStatus, JobDefinition
from cronctl.runtime.fire import records
from cronctl.runtime.fire.batches import FinalBatch
from cronctl.runtime.fire.handled import SCHEDULED, Handled
from cronctl.runtime.fire.holding import HeldFires
from cronctl.runtime.fire.records import REMOTE_RETRY, Ready, Run, locks_for
from cronctl.runtime.fire.relaying import RelayedFires
from cronctl.runtime.fire.resolving import Targets
from cronctl.runtime.fire.retryrows import RetryRows
from cronctl.runtime.fire.rowwrites import RowWrites
from cronctl.runtime.fire.waiters import IN_FLIGHT, WaiterRows
from cronctl.runtime.fire.wakelog import WakeLog, ended_line
from cronctl.runtime.fire.watch import NullWatch, Watch
from cronctl.runtime.health import DatabaseHealth
from cronctl.runtime.inbox import Done, Post, WaitersLanded
from cronctl.runtime.io import IoWorker
from cronctl.runtime.logsetup import ids
from cronctl.store.base import Store, StoreUnavailable, job_lock

log = logging.getLogger("cronctl.runtime")


FINAL_DELAY = 0.025  # seconds the final statuses of a burst gather for one transaction
STARTED_LATE = 0.5  # seconds after its due that a start is told to the core
is_tracked = needs_store  # single_instance needs its row: the insert is the election


class Firing(RowWrites):
    def __init__(
        self, *, core: SchedulerCore, store: Store, dispatcher: Dispatcher,
        flusher: LogFlusher, io: IoWorker, health: DatabaseHealth, node_id: str,
        clock: Callable[[], datetime], post: Post, mono: Callable[[], float],
    ) -> None:
        self.core = core
        self.store = store
        self.dispatcher = dispatcher
        self.flusher = flusher
        self.io = io
        self.node_id = node_id
        self.clock = clock
        self.mono = mono  # the core's timers (retries, deadlines) run on this clock
        self.post = post
        self.running: dict[ExecKey, Run] = {}
        self.handled = Handled(core, node_id=node_id, persistent=store.persistent,
                               watch=lambda: self.watch)
        self.cursors = self.handled.cursors
        self.finals = FinalBatch(store, io.submit, flusher.drain, clock, later=io.after,
                                 delay=FINAL_DELAY)
        self.finals.on_fenced = lambda row, status, at: self.watch.fenced(row, status, at)
        self._fires: list[Fire] = []  # deferred to the end of the batch (see ``batch``)
        self._batching = 0
        self.stopping = False  # set by the Scheduler when a stop begins
        self.targets = Targets(dispatcher)
        self.lost_recoveries: set[int] = set()
        # When interrupted attempts handed to recovery really ended (their process group
        # ended, or their node was last known alive): the time their rows are closed with.
        self.ended: dict[int, datetime] = {}
        self.lost_why: dict[int, str] = {}  # why a taken-over attempt is lost (Liveness)
        self.triggers: dict[str, int] = {}  # occurrence id -> trigger request id
        self.lateness: collections.deque[float] = collections.deque(maxlen=200_000)
        self._sinks: dict[str, ProcessLogSink] = {}  # untracked fires' log sinks, by job
        self.wakelog = WakeLog(log)  # the fired / succeeded lines, one per wake (or burst)
        self.fired = 0
        self._store_failing = False  # a store error (not an outage) was logged
        self.group_index: dict[str, list[str]] = {}  # serial group -> job ids (set on load)
        self.health = health  # the store's reachability (one flag, shared)
        self.watch: Watch = NullWatch()  # metrics and notifications (set by the Scheduler)
        self.retry_rows = RetryRows(store, node_id=node_id, clock=clock, submit=io.submit,
                               unavailable=health.failed)
        # The waiters' rows have a writer of their own: queued behind the I/O thread's
        # final statuses of the previous second, a burst's next fires waited for them.
        self.rows_io = IoWorker("cronctl-rows")
        self.waiters = WaiterRows(store, node_id=node_id, submit=self._to_rows_writer,
                                  unavailable=health.failed,
                                  post=lambda: post(WaitersLanded()))
        self.held = HeldFires()  # admitted, held until their instant or their row
        # Waiting fires the workers start (relaying.py).
        self.relayed = RelayedFires(
            dispatcher, core=core, waiters=self.waiters, persistent=store.persistent,
            post=post, mono=mono, clock=clock, sink_of=self.sink_of,
            sink_for=flusher.sink_for, stopping=lambda: self.stopping,
            store_down=lambda: self.health.down,
            owner=lambda eid: records.owner_check(store, eid, node_id, None))

    # --- the action loop -------------------------------------------------------------------

    def execute(self, decision: Decision) -> None:
        """Carry out ``decision``. Fires are collected and started together at the end
        (of this call, or of the enclosing :meth:`batch`): their rows are written in one
        transaction before any of their handlers starts."""
        self._run(decision.actions)
        if not self._batching:
            self.flush_fires()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Collect the fires of every decision executed inside; start them on exit."""
        self._batching += 1
        try:
            yield
        finally:
            self._batching -= 1
            if not self._batching:
                self.flush_fires()

    def flush_fires(self) -> None:
        relayed = self.relayed
        relayed.settle(self._fires, self.held.timed(), first=True)  # (for the workers they free)
        while self._fires:
            fires, self._fires = self._fires, []
            if not self.stopping:  # (decided ahead of their instant: held until it)
                fires = self.held.until_due(fires, self.clock(), self.mono())
                if not fires:
                    continue
            if relayed.pending:  # those a worker started already are recorded as running
                fires, started = relayed.adopt_started(fires)
                for a, staged in started:
                    done = self._adopt(a, staged)
                    if done is not None:
                        self._run(done.actions)
            self._run(self._hold_back(fires) if self.stopping else self._fire_all(fires))
        relayed.settle(self.held.timed())
        down = self.stopping or (self.health.down)
        if self.waiters.wanted and not down:
            self.waiters.write(self.clock())  # after this wake's fires are dispatched
        self.wakelog.end_wake(self.core.waiting)

    def _to_rows_writer(self, task: Callable[[], object]) -> None:
        if not self.rows_io.started:
            self.rows_io.start()
        self.rows_io.submit(task)

    def discard_waiters(self) -> None:
        """At stop (I/O thread, the scheduler thread ended): once the waiters' writer has
        written what it was given, delete the rows of fires that never started."""
        if self.rows_io.started:
            self.rows_io.stop(5.0)
        self.waiters.discard_all()

    def landed(self) -> None:
        """A batch of waiters' rows was written: the fires held for it go on (and those
        staged for the relay get their context)."""
        landed = self.waiters.land()
        self.relayed.landed()
        if landed and self.held.for_rows:
            self._fires.extend(self.held.landed())
        if not self._batching:
            self.flush_fires()

    def release_due(self, now: datetime) -> None:
        """Start the fires held for their instant that has come (all of them: stopping)."""
        due = self.held.due(None if self.stopping else now, self.mono())
        if due:
            self._fires.extend(due)
            if not self._batching:
                self.flush_fires()

    def sink_of(self, job: JobDefinition) -> LogSink:
        """An untracked fire's log sink (it holds nothing but the job id: one per job)."""
        return self._sinks.get(job.id) or self._sinks.setdefault(job.id, ProcessLogSink(job.id))

    def _hold_back(self, fires: list[Fire]) -> list[Action]:
        """Stopping: the attempts that would start now (a slot freed) do not
        (docs/behaviour.md#running, "stop firing"). A retry keeps its pending row for the next
        start; a planned instant never dispatched is below no cursor, so the next start's misfire
        policy decides it; a waiting fire's row written ahead is discarded with the others."""
        now, out = self.clock(), list[Action]()
        for a in fires:
            self.trigger_done(a.occurrence_id, None, "the scheduler is stopping")
            out.extend(self.core.release(a.key, now, mono=self.mono()).actions)
        return out

    def _run(self, actions: Iterable[Action]) -> None:
        work: collections.deque[Action] = collections.deque(actions)
        while work:
            action = work.popleft()
            if isinstance(action, Fire):
                self._fires.append(action)
                continue
            try:
                follow = self._do(action)
            except Exception:  # a bug here must not stop the scheduler thread
                log.exception("internal error while handling %s", type(action).__name__)
                follow = self._contain(action)
            if follow is not None:
                work.extend(follow.actions)

    def _do(self, a: Action) -> Decision | None:
        kind = type(a)
        if kind is Enqueue:  # the most frequent by far in a burst: 1 per waiting fire
            assert isinstance(a, Enqueue)
            relayed = self.relayed.open
            if relayed or (a.occurrence_id is not None and self.waiters.enabled):
                job = self.core.job(a.job_id)
                if relayed:  # (an untracked fire for a slot: a worker may start it)
                    self.relayed.want(a, job)
                if job is not None and self.waiters.enabled:
                    self.waiters.want(a, job)  # (it ignores a wait that has no occurrence)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("waiting job=%s planned=%s for=%s", a.job_id, a.planned.isoformat(),
                          a.reason.value, extra=ids(a.job_id))
        elif isinstance(a, Finish):
            self._final(a.key, a.status, a.error)
        elif isinstance(a, DeadLetter):
            self._final(a.key, ExecutionStatus.DEAD_LETTER, a.error)
        elif isinstance(a, Abandon):
            self._abandon(a)
        elif isinstance(a, Skip):
            self._skip(a)
        elif isinstance(a, AdvanceCursor):
            self.handled.cursor(a.job_id, a.planned)
        elif isinstance(a, Missed):
            self.handled.missed(a)
        elif isinstance(a, Retry):
            self._retry(a)
        elif isinstance(a, CloseInterrupted):
            self._close_interrupted(a)
        return None

    def _contain(self, action: Action) -> Decision | None:
        """After an unexpected error: give back whatever the action held."""
        if isinstance(action, Fire) and action.key not in self.running:
            return self.core.release(action.key, self.clock(), mono=self.mono())
        return None

    # --- firing ----------------------------------------------------------------------------

    def _fire_all(self, fires: list[Fire]) -> list[Action]:
        """Check each fire, write the rows of the tracked ones in ONE transaction (as
        ``running``: each is dispatched right after), then dispatch them in order.
        Returns the follow-up actions (releases, failures)."""
        follow: list[Action] = []
        ready: list[Ready] = []
        now = self.clock()
        for a in fires:
            try:
                got = self._prepare(a, now)
            except Exception:
                log.exception("internal error while handling Fire")
                got = self._contain(a)
            if isinstance(got, Ready):
                ready.append(got)
            elif got is not None:
                follow.extend(got.actions)
        tracked = [r for r in ready if r.tracked and not r.written]
        if tracked:
            ready = self._record(ready, tracked, now, follow)
        for r in ready:
            try:
                done = self._launch(r)
            except Exception:
                log.exception("internal error while handling Fire")
                done = self._contain(r.fire)
            if done is not None:
                follow.extend(done.actions)
        return follow

    def _prepare(self, a: Fire, now: datetime) -> Ready | Decision | None:
        job = self.core.job(a.job_id)
        if job is None:
            return self._release(a, now, "job no longer defined")
        if a.recovered_from is not None and a.recovered_from in self.lost_recoveries:
            return self._release(a, now, "recovered by another node")
        why = self.targets.resolve(job)
        if why is not None:
            return self._release(a, now, why, skip=SkipReason.UNRESOLVED_TARGET)
        if not is_tracked(job):
            return Ready(a, job, False)
        if self.health.down:
            return self.core.unavailable(a.key, now, mono=self.mono())  # it remembers
        row = a.row if a.attempt == 1 else self.retry_rows.row_for(a)
        if row is None and a.attempt == 1:
            written = self.waiters.take(a)
            if written == IN_FLIGHT:  # started when its batch lands (see landed)
                self.held.until_row(a)
                return None
            if written is not None:  # no write now: dispatched at once
                return Ready(a, job, True, execution_id=written, written=True)
        # (single_instance: the fencing token is taken with the row's guard lock, in its
        # transaction; see RowWrites)
        return Ready(a, job, True, row=row, locks=locks_for(job))

    def _retry(self, a: Retry) -> None:
        log.info("retry scheduled job=%s attempt=%d at=%s", a.job_id, a.attempt,
                 a.due.isoformat(), extra=ids(a.job_id))
        job = self.core.job(a.job_id)
        if (job is not None and is_tracked(job) and self.store.persistent
                and not (self.health.down)):
            self.retry_rows.write(a, job)  # a pending row: survives a stop or a crash

    def _launch(self, r: Ready) -> Decision | None:
        a, job, execution_id = r.fire, r.job, r.execution_id
        if execution_id is not None:
            sink: LogSink = self.flusher.sink_for(execution_id)
        else:
            sink = self.sink_of(job)
        spawned = (None if execution_id is None else
                   records.spawn_recorder(self.store, self.io.submit, execution_id))
        request = DispatchRequest(job, a.occurrence_id, a.planned, a.attempt, a.origin,
                                  execution_id, r.token, on_spawn=spawned,
                                  still_owner=records.owner_check(self.store, execution_id,
                                                                  self.node_id, r.token))
        run = Run(a, job, execution_id, token=r.token)
        self.running[a.key] = run
        key = a.key
        try:
            run.handle = self.dispatcher.start(
                request, sink, lambda outcome: self.post(Done(
                    key, outcome, self.clock() - timedelta(seconds=outcome.ended_ago))))
        except Exception as exc:
            log.error("dispatch failed job=%s exec=%s: %s", job.id, execution_id,
                      first_line(exc), extra=ids(job.id, execution_id))
            return self.core.on_complete(key, ExecutionStatus.FAILED,
                                         f"dispatch failed: {first_line(exc)}", self.clock(),
                                         mono=self.mono())
        self._began(run, self.clock(), written=r.written)
        return None

    def _adopt(self, a: Fire, s: Staged) -> Decision | None:
        """Record ``a`` as running since a worker of the relay started it; its outcome, if
        it came already, is handed to the core now."""
        execution = s.run[0]
        job: JobDefinition = execution.request.job
        started = s.started
        assert started is not None  # (adopted: a worker started it)
        eid: int | None = execution.request.execution_id
        if eid is not None:  # tracked: its row was written while it waited
            self.waiters.take(a)
        run = Run(a, job, eid, handle=s.handle)
        self.running[a.key] = run
        s.key = a.key
        self._began(run, started, written=eid is not None)
        outcome = s.outcome
        if outcome is None:
            return None
        log.debug("relayed job=%s ended before it was admitted", job.id, extra=ids(job.id))
        return self.core.on_complete(a.key, outcome.status, outcome.error, self.clock(),
                                     mono=self.mono(), retryable=outcome.retryable)

    def _began(self, run: Run, started: datetime, *, written: bool) -> None:
        """``run`` started at ``started`` (dispatched here, or by a relay worker): what is
        recorded of every start."""
        a, job, eid = run.fire, run.job, run.execution_id
        run.started = started
        if written:  # its row was written as pending: it becomes running
            assert eid is not None
            self.finals.started(eid, started)
        self.fired += 1
        self.lateness.append(late := (started - a.due).total_seconds())
        if late > STARTED_LATE:  # (its row write waited: see SchedulerCore.started_late)
            self.core.started_late(a.key, started)
        self.watch.started(run)
        if eid is not None and a.origin in SCHEDULED:
            self.handled.cursor(job.id, a.planned)
        if self.triggers:
            self.trigger_done(a.occurrence_id, eid, None)
        self.wakelog.fired(job.id, eid, a.planned, a.attempt, a.origin)

    def _blocked(self, r: Ready, key: str, now: datetime) -> Decision:
        """A guard lock of ``r`` is held on another node (the store wrote nothing)."""
        a = r.fire
        log.debug("blocked job=%s planned=%s: %s held on another node", a.job_id,
                  a.planned.isoformat(), key, extra=ids(a.job_id))
        return self.core.blocked(a.key, now, now + REMOTE_RETRY,
                                 overlap=key == job_lock(a.job_id), mono=self.mono())

    def _release(self, a: Fire, now: datetime, why: str, *,
                 skip: SkipReason | None = None) -> Decision:
        self.trigger_done(a.occurrence_id, None, why)
        self.retry_rows.close(a, why)
        self.waiters.forget(a)
        return self.core.release(a.key, now, skip=skip, mono=self.mono())

    def _unavailable(self, exc: StoreUnavailable, fires: list[Fire], now: datetime
                     ) -> Decision:
        """The store is unreachable: report it (one WARNING per outage) and let the core
        hold these attempts until it is back."""
        self.health.failed(exc)
        actions: list[Action] = []
        for a in fires:
            actions.extend(self.core.unavailable(a.key, now, mono=self.mono()).actions)
        return Decision(tuple(actions), self.core.next_wake())

    # --- endings ---------------------------------------------------------------------------

    def on_done(self, key: ExecKey | Staged, outcome: Outcome,
                at: datetime | None = None) -> None:
        if type(key) is Staged:  # a relayed attempt: the core's key once it admitted it
            key = self.relayed.outcome(key, outcome)
            if key is None:
                return
        assert not isinstance(key, Staged)
        run = self.running.get(key)
        if run is None:
            return  # abandoned at its timeout already; this late result is ignored
        run.usage, run.ended = outcome.usage, at
        self.execute(self.core.on_complete(key, outcome.status, outcome.error, self.clock(),
                                           mono=self.mono(), retryable=outcome.retryable))

    def _final(self, key: ExecKey, status: ExecutionStatus, error: str | None) -> None:
        run = self.running.pop(key, None)
        if run is None:
            return
        self.watch.finished(run, status, error)
        eid = run.execution_id
        if status is not ExecutionStatus.SUCCEEDED:
            self.wakelog.flush()  # its `fired` line first, though a burst is still draining
        if eid is not None:  # its `finished` line once the final status is written
            self.finals.add(eid, status, error, run.token, prompt=bool(locks_for(run.job)),
                            usage=run.usage, job_id=run.job.id, ended=run.ended)
        elif status is ExecutionStatus.SUCCEEDED:
            self.wakelog.succeeded(run.job.id, eid)
        else:
            ended_line(log, run.job.id, eid, status, error)

    def _abandon(self, a: Abandon) -> None:
        run = self.running.get(a.key)
        if run is None or run.handle is None:
            return
        self.watch.abandoned(run)
        self.wakelog.flush()  # (as in _final)
        log.warning("timed out job=%s exec=%s after %s", run.job.id, run.execution_id,
                    run.job.timeout, extra=ids(run.job.id, run.execution_id))
        try:
            run.handle.abandon()
        except Exception as exc:
            log.error("abandon failed job=%s: %s", run.job.id, first_line(exc))

    def cancel(self, execution_ids: set[int]) -> None:
        for run in self.running.values():
            if run.execution_id in execution_ids and not run.cancel_sent:
                self.cancel_run(run)

    def cancel_run(self, run: Run) -> None:
        run.cancel_sent = True
        self.wakelog.flush()  # (as in _final)
        log.info("cancelling job=%s exec=%s", run.job.id, run.execution_id,
                 extra=ids(run.job.id, run.execution_id))
        try:
            if run.handle is not None:
                run.handle.cancel()
        except Exception as exc:
            log.error("cancel failed job=%s: %s", run.job.id, first_line(exc))

    # --- the rest --------------------------------------------------------------------------

    def _skip(self, a: Skip) -> None:
        self.handled.skip(a)
        self.waiters.skipped(a.job_id, a.planned, a.last)
        if a.reason is SkipReason.REMOVED and len(self.retry_rows):
            self.retry_rows.close_removed(a.job_id, a.planned)

    def trigger_done(self, occurrence_id: str, execution_id: int | None,
                      error: str | None) -> None:
        request = self.triggers.pop(occurrence_id, None)
        if request is not None:
            self.io.submit(lambda: self.store.complete_trigger(
                request, execution_id=execution_id, error=error))
