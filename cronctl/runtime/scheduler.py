"""``Scheduler``: drives the threadless core with ONE scheduler thread.

The thread sleeps in ``inbox.get(timeout=next_wake - now)``; completions, cancel
requests, triggers, reloads and stop arrive through that inbox from any thread, so the
core is only ever touched by this thread and no timer or thread exists per job. Handler
work runs in the dispatcher's pools; store work that need not delay a fire runs on the
I/O thread (:mod:`cronctl.runtime.io`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from functools import partial

from cronctl.config import Config
from cronctl.core import ClockAheadError, ClockSkewError, SchedulerCore, refuse_on_skew
from cronctl.dispatch import Dispatcher, default_dispatcher
from cronctl.dispatch.logbuffer import LogFlusher
from cronctl.errors import first_line
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Origin
from cronctl.runtime import startup
from cronctl.runtime.clocks import DatabaseClock
from cronctl.runtime.fire.firing import Firing
from cronctl.runtime.fire.lookahead import Lookahead
from cronctl.runtime.health import DatabaseHealth
from cronctl.runtime.inbox import (
    Cancel,
    Decided,
    Done,
    Message,
    Paused,
    Recover,
    Reload,
    Stop,
    StoreBack,
    Trigger,
    WaitersLanded,
)
from cronctl.runtime.io import IoWorker
from cronctl.runtime.liveness import Liveness, attempt_scope
from cronctl.runtime.logsetup import ids
from cronctl.runtime.observers import watch_for
from cronctl.runtime.polls import StorePolls
from cronctl.runtime.pruning import Pruner
from cronctl.runtime.supervision import supervised
from cronctl.runtime.systemd import Notifier, SystemdNotifier
from cronctl.runtime.upstream import Upstream
from cronctl.store.base import Store

log = logging.getLogger("cronctl.runtime")
POLL_INTERVAL = 0.5  # cancel requests, trigger requests, cursor batch
PAUSE_POLL_INTERVAL = 2.0
KILL_GRACE_CAP = 15.0  # longest wait after cancelling at shutdown
IO_DRAIN_MIN = 2.0  # the I/O thread's least time to drain at shutdown
TICK_SLICE = 1000  # due entries per tick: a large burst starts its first fires sooner


class Scheduler:
    """The scheduler other code embeds (``cronctl run``, tests, the benchmark).

    ``start()`` registers the node, runs recovery and the misfire policy, starts the
    scheduler thread and returns once READY; ``stop()`` stops firing, lets running
    executions finish up to ``shutdown_timeout``, cancels the rest and drains logs."""

    def __init__(
        self,
        config: Config,
        jobs: Sequence[JobDefinition],
        store: Store,
        dispatcher: Dispatcher | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        monotonic: Callable[[], float] | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.config = config
        self.store = store
        # Retries, timeouts and deadlines: never measured on the (steppable) wall clock.
        self.mono = monotonic or time.monotonic
        self.clocks = DatabaseClock(store, local=clock or partial(datetime.now, UTC),
                                    mono=self.mono, limit=config.clock_skew_limit)
        self.clock = self.clocks.clock  # (held to the database server's clock)
        self.notifier = notifier if notifier is not None else SystemdNotifier.from_env()
        self._own_dispatcher = dispatcher is None
        self.scope = attempt_scope(config.database) if dispatcher is None else ""  # (tags)
        if dispatcher is None:
            dispatcher = default_dispatcher(config.max_concurrent_jobs, scope=self.scope,
                                            max_log_lines=config.retention.max_log_lines,
                                            cgroup=config.cgroup)  # (resolved by run)
        self.dispatcher: Dispatcher = dispatcher
        self._jobs = tuple(jobs)
        self._ttl = config.heartbeat_interval * 3
        self._inbox: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self.core = SchedulerCore(self._jobs, max_concurrent_jobs=config.max_concurrent_jobs,
                                  clock_skew_limit=config.clock_skew_limit,
                                  durable=store.persistent)
        self.flusher = LogFlusher(store, clock=self.clock)
        self.io = IoWorker()
        self.health = DatabaseHealth(check=self._probe_store, later=self.io.after,
                                     back=lambda: self._inbox.put(StoreBack()))
        self.io.on_unavailable = self.health.failed
        self.firing = Firing(core=self.core, store=store, dispatcher=self.dispatcher,
                             flusher=self.flusher, io=self.io, health=self.health,
                             node_id=config.node_id, clock=self.clock, post=self._inbox.put,
                             mono=self.mono)
        self.polls = StorePolls(store, node_id=config.node_id, ttl=self._ttl, clock=self.clock,
                                post=self._inbox.put, health=self.health,
                                flush=self._flush_waiting, halt=self.halt)
        self.polls.jobs_are(j.id for j in self._jobs)
        self.upstream = Upstream(store, node_id=config.node_id, clock=self.clock,
                                 jobs=lambda: self._jobs, ttl=self._ttl,  # section 8
                                 decided=lambda skip: self._inbox.put(Decided(skip)))
        beat = min(config.heartbeat_interval.total_seconds(),  # (the store may beat faster)
                   float("inf") if store.beat_interval is None else store.beat_interval)
        self.liveness = Liveness(
            store, node_id=config.node_id, ttl=self._ttl, beat_every=beat, clock=self.clock,
            jobs=lambda: {j.id: j for j in self._jobs}, why=self.firing.lost_why,
            heartbeat=self.clocks.beating(supervised(self.dispatcher, store, config.node_id,
                                                     self._ttl, beat, self.polls.heartbeat)),
            recover=lambda rows, ends: self._inbox.put(Recover(rows, ends)),
            unavailable=self.health.failed, down=lambda: self.health.down, scope=self.scope)
        f = self.firing
        self.lookahead = Lookahead(self.core, held=f.held, relayed=f.relayed,
                                   execute=f.execute, slots=config.max_concurrent_jobs,
                                   slice_=TICK_SLICE)
        self.watch = f.watch = watch_for(self)  # metrics (section 7), notifications
        self.liveness.homes.attach(self.core)  # in a cluster: see runtime.homes
        self._thread = threading.Thread(target=self._loop, name="cronctl-scheduler", daemon=True)
        self._ready = threading.Event()
        self._started = False
        self._stopping = False
        self._stopped = False
        self.halted: str | None = None  # why this node stopped acting (see halt)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            raise RuntimeError("Scheduler.start() was already called")
        self._started = True
        # docs/behaviour.md#clocks: a clock ahead of the database's, or behind a persisted
        # cursor, is refused before anything is written (no node row, no timestamp).
        self.clocks.measure()
        self.clocks.refuse_if_ahead()
        now, node, db_now = self.clock(), self.config.node_id, self.clocks.database()
        shared = startup.capped(startup.shared_states(self.store), db_now)
        states = startup.capped(startup.node_states(self.store, node, self._jobs, shared),
                                db_now)
        refuse_on_skew(shared, now, self.config.clock_skew_limit)  # every persisted cursor
        refuse_on_skew(states, now, self.config.clock_skew_limit)
        previous = self.store.get_node(node) if self.store.persistent else None
        self.polls.register(now)
        self.polls.warn_if_not_alone(now)
        self.upstream.started(now)
        try:
            if self.store.persistent:
                # Guards this node's previous run held: its executions are recovered below.
                self.store.release_locks(node)
            rows = startup.recoverable(self.store, node, now, self._ttl)
            self.liveness.handed(rows)
            self.firing.ended.update(startup.interrupted_ends(
                self.store, self.liveness, rows, previous, now, self._ttl))
            initial = self.core.start(now, states, startup.recovered(rows), mono=self.mono())
        except BaseException:
            self._unregister()
            raise
        self._index_groups()
        up = self.polls.while_up
        self.io.every("log flush", self.config.progress_flush_interval.total_seconds(),
                      up(self.flusher.flush))
        self.io.every("pause poll", PAUSE_POLL_INTERVAL, up(self.polls.paused))
        # The definitions' snapshot is informational: READY does not wait for it.
        self.io.in_background("definitions", self._jobs,
                              partial(self.store.save_definitions, now=now))
        self.pruner = Pruner.attach(self.io, self.store, self.config.retention, node_id=node,
                                    clock=self.clock, is_down=lambda: self.health.down)
        self.polls.jobs_are(self.polls.known, {j for j, st in states.items() if st.paused})
        self.io.start()
        self.polls.listen(lambda: self.io.submit(lambda: self._poll_store([], self._stopping)))
        self.liveness.start()
        self._initial = initial
        self.watch.begin(states, now)  # before the first fire
        self._thread.start()
        self._ready.wait()
        jobs = sum(1 for j in self._jobs if j.enabled)
        self.notifier.notify(f"READY=1\nSTATUS=scheduling {jobs} jobs as node {node}")
        log.info("ready node=%s jobs=%d database=%s", node, jobs,
                 self.config.database_display)
        if log.isEnabledFor(logging.DEBUG):
            startup.log_next_fires(self._jobs, now)

    def stop(self, timeout: float | None = None) -> None:
        """Graceful stop; ``timeout`` overrides ``shutdown_timeout``. Idempotent."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        grace = self.config.shutdown_timeout.total_seconds() if timeout is None else timeout
        deadline = self.mono() + grace
        self._inbox.put(Stop(timeout))
        self._thread.join()
        shutdown = getattr(self.dispatcher, "shutdown", None)
        if self._own_dispatcher and callable(shutdown):
            shutdown(False)  # kills what is still running: no child outlives us
        self.io.submit(self.firing.discard_waiters)  # fires that never started
        self.io.submit(self.firing.finals.flush)  # (its timer would not run any more)
        self.io.submit(lambda: self.firing.cursors.flush(self.store))
        # The I/O backlog (final statuses, cursors) gets what is left of the grace, and at
        # least a moment; what it cannot write is recovered at the next start.
        if not self.io.stop(max(deadline - self.mono(), IO_DRAIN_MIN)):
            log.warning("shutdown: store writes still queued after the shutdown timeout; "
                        "unfinished rows are recovered at the next start")
        self.flusher.drain_all(self.mono() + 5.0)
        self.watch.close()
        self._unregister()
        log.info("stopped node=%s", self.config.node_id)

    def halt(self, why: str) -> None:
        """Stop acting at once, from any thread (the database is not the one it had)."""
        if self.halted is None:
            self.halted = why
            log.error("%s; node %s stops acting", why, self.config.node_id)
            self._inbox.put(Stop(None))

    def reload(self, jobs: Sequence[JobDefinition]) -> None:
        """Swap the job set (waits until the scheduler thread applied it)."""
        done: Future[None] = Future()
        self._inbox.put(Reload(tuple(jobs), done))
        done.result()

    def trigger(self, job_id: str, *, planned: datetime | None = None,
                origin: Origin = Origin.MANUAL) -> str:
        """Run one occurrence now (``origin = manual``); returns its occurrence id."""
        done: Future[str] = Future()
        self._inbox.put(Trigger(job_id, origin, planned, None, done))
        return done.result()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once nothing runs or waits (tests and the benchmark)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not (self.firing.running or self.core.waiting or self.firing.held):
                return True
            time.sleep(0.01)
        return False

    @property
    def lateness(self) -> list[float]:
        """Start minus due (planned + jitter) of recent fires, in seconds."""
        return list(self.firing.lateness)

    def stats(self) -> dict[str, int]:
        return {"fired": self.firing.fired, "skipped": self.firing.handled.skipped,
                "running": len(self.firing.running), "waiting": self.core.waiting}

    # --- the scheduler thread --------------------------------------------------------------

    def _loop(self) -> None:
        try:
            self.firing.execute(self._initial)
        finally:
            self._ready.set()
        wd = self.notifier.watchdog_interval
        next_poll = self.mono()
        next_wd = next_poll + wd if wd else float("inf")
        deadline = hard = float("inf")
        while True:
            if not self._stopping:
                self._tick()
            mono = self.mono()
            if mono >= next_poll:
                next_poll = mono + POLL_INTERVAL
                self._poll()
            if mono >= next_wd:
                next_wd = mono + (wd or 1.0)
                self.notifier.notify("WATCHDOG=1")
            if self._stopping:
                if not (self.firing.running or self.firing.held) or mono >= hard:
                    self._abort_remaining()
                    return
                if mono >= deadline:
                    deadline, hard = float("inf"), mono + self._kill_grace()
                    log.warning("shutdown timeout: cancelling %d running executions",
                                len(self.firing.running))
                    for run in list(self.firing.running.values()):
                        self.firing.cancel_run(run)
            wait = min(next_poll, next_wd, deadline, hard) - self.mono()
            wake = None if self._stopping else self.lookahead.wake_in(self.clock(), self.mono())
            if wake is not None:
                wait = min(wait, wake)
            wait = self.firing.relayed.give_way(wait)  # (to workers starting staged fires)
            try:
                msg = self._inbox.get(timeout=max(wait, 0.0))
            except queue.Empty:
                continue
            with self.firing.batch():  # the fires of all these messages: one transaction
                stopping = self._drain_inbox(msg)
            if stopping is not None:
                deadline = stopping

    def _drain_inbox(self, msg: Message) -> float | None:
        """Handle ``msg`` and every message already queued; returns the shutdown deadline
        (monotonic) when one of them was a stop."""
        deadline: float | None = None
        while True:
            stop = self._handle(msg)
            if stop is not None:
                self._stopping = self.firing.stopping = True
                self.firing.release_due(self.clock())  # (given back: nothing starts)
                self.notifier.notify("STOPPING=1\nSTATUS=stopping")
                grace = stop if stop >= 0 else self.config.shutdown_timeout.total_seconds()
                deadline = self.mono() + grace
                log.info("stopping: waiting up to %.0fs for %d running executions",
                         grace, len(self.firing.running))
            try:
                msg = self._inbox.get_nowait()
            except queue.Empty:
                return deadline

    def _tick(self) -> None:
        now, mono = self.clock(), self.mono()
        self.firing.release_due(now)
        try:
            self.clocks.refuse_if_ahead()
            decision = self.core.tick(now, mono=mono, budget=TICK_SLICE)
        except (ClockSkewError, ClockAheadError) as exc:
            self.clocks.refuse(exc, self.notifier)
            return
        self.clocks.acting()
        if decision.actions:
            if log.isEnabledFor(logging.DEBUG):  # (the decision carries its next wake)
                log.debug("wake: %d actions; next wake %s", len(decision.actions),
                          decision.next_wake.isoformat() if decision.next_wake else "none")
            self.firing.execute(decision)
        if not self._stopping:
            self.lookahead.decide(now, mono)

    def _handle(self, msg: Message) -> float | None:
        """One inbox message; returns the grace (seconds, -1 for the default) on stop."""
        try:
            if type(msg) is Done:  # the most frequent by far
                self.firing.on_done(msg.key, msg.outcome, msg.at)
            elif isinstance(msg, WaitersLanded):
                self.firing.landed()
            elif isinstance(msg, Stop):
                self.firing.relayed.close()  # (staged fires no worker started yet)
                return -1.0 if msg.timeout is None else float(msg.timeout)
            elif isinstance(msg, Cancel):
                self.firing.cancel(msg.execution_ids)
            elif isinstance(msg, Trigger):
                self._trigger(msg)
            elif isinstance(msg, Reload):
                if self.firing.relayed.settled_for(msg, self._inbox.put):
                    self._reload(msg.jobs, msg.done)
            elif isinstance(msg, Paused):
                for job_id, paused in msg.changes.items():
                    self.core.set_paused(job_id, paused)
            elif isinstance(msg, Recover) and not self._stopping:
                self.firing.ended.update(msg.ends)
                self.firing.execute(self.core.recover(startup.recovered(msg.rows),
                                                     self.clock(), mono=self.mono()))
            elif isinstance(msg, StoreBack):
                self._store_back()
            elif isinstance(msg, Decided):
                self.watch.skipped(msg.skip)
        except Exception:
            log.exception("internal error handling %s", type(msg).__name__)
        return None

    def _trigger(self, msg: Trigger) -> None:
        job_id, origin, planned, request_id, done = msg
        if self._stopping:
            if done is not None:
                done.set_exception(RuntimeError("the scheduler is stopping"))
            return
        try:
            occurrence, decision = self.core.trigger(job_id, self.clock(), planned=planned,
                                                     origin=origin, mono=self.mono())
        except Exception as exc:
            if done is not None:
                done.set_exception(exc)
            if request_id is not None:
                rid, why = request_id, first_line(exc)
                self.io.submit(lambda: self.store.complete_trigger(rid, error=why))
            return
        if request_id is not None:
            self.firing.triggers[occurrence] = request_id
        log.info("triggered job=%s origin=%s occurrence=%s", job_id, origin.value, occurrence,
                 extra=ids(job_id))
        if done is not None:
            done.set_result(occurrence)
        self.firing.execute(decision)

    def _reload(self, jobs: tuple[JobDefinition, ...], done: Future[None]) -> None:
        try:
            decision = self.core.reload(jobs, self.clock(), mono=self.mono())
            self._jobs = jobs
            self.polls.jobs_are(j.id for j in jobs)  # (the next pause poll reports all)
            self._index_groups()
            self.io.in_background("definitions", jobs, self.store.save_definitions)
            log.info("reloaded jobs=%d", sum(1 for j in jobs if j.enabled))
            self.notifier.notify(f"STATUS=scheduling {sum(1 for j in jobs if j.enabled)} jobs")
            self.firing.execute(decision)
        finally:
            done.set_result(None)

    def _abort_remaining(self) -> None:
        """Stopping: the dispatcher is shut down next; record what is left."""
        for key in list(self.firing.running):
            self.firing.execute(self.core.on_complete(
                key, ExecutionStatus.CANCELLED, "cancelled: scheduler shut down", self.clock(),
                mono=self.mono()))
        self.firing.wakelog.flush()  # the lines a burst held back

    def _kill_grace(self) -> float:
        longest = max((r.job.kill_timeout.total_seconds() for r in self.firing.running.values()),
                      default=0.0)
        return min(longest + 1.0, KILL_GRACE_CAP)

    def _index_groups(self) -> None:
        self.firing.waiters.jobs_are(self._jobs)
        index: dict[str, list[str]] = {}
        for job in self._jobs:
            if job.serial_group is not None:
                index.setdefault(job.serial_group, []).append(job.id)
        self.firing.group_index = index

    def _store_back(self) -> None:
        outage = self.health.up()
        log.info("store reachable again after %.1fs; applying the misfire policy to the "
                 "fires it missed", outage)
        self.notifier.notify(f"STATUS=scheduling {sum(1 for j in self._jobs if j.enabled)} "
                             "jobs")
        self.firing.execute(self.core.store_back(self.clock(), mono=self.mono()))

    # --- store polling (I/O thread) ---------------------------------------------------------

    def _flush_waiting(self) -> None:
        """Cursors and final statuses that waited for the store."""
        self.firing.cursors.flush(self.store)
        self.firing.finals.flush()

    def _probe_store(self) -> None:
        self.polls.probe()

    def _poll(self) -> None:
        """On the scheduler thread: hand the I/O thread what to poll for."""
        waiting = self.core.waiting
        self.watch.loop(waiting)
        self.firing.wakelog.end_wake(waiting)  # lines held while a burst drains
        if not self.store.persistent and not self.firing.running and not self.upstream.any():
            return
        live = [r.execution_id for r in self.firing.running.values()
                if r.execution_id is not None and not r.cancel_sent]
        stopping = self._stopping
        self.io.submit(lambda: self._poll_store(live, stopping))

    def _poll_store(self, live: list[int], stopping: bool) -> None:
        if self.health.down:
            return
        self.firing.cursors.flush(self.store)
        if not stopping:
            self.upstream.poll()  # before the trigger poll, which takes what it decided
        self.polls.requests(live, stopping=stopping or self._stopping)

    def _unregister(self) -> None:
        self.polls.close()
        self.liveness.stop()
        try:
            if self.store.persistent:
                self.store.release_locks(self.config.node_id)
            self.store.unregister_node(self.config.node_id)
        except Exception as exc:
            log.warning("could not unregister node %s: %s", self.config.node_id,
                        first_line(exc))

    # --- what observers read (observers.SchedulerView; any thread) ------------------------

    def jobs(self) -> Sequence[JobDefinition]:
        return self._jobs

    def job(self, job_id: str) -> JobDefinition | None:
        return self.core.job(job_id)

    def store_down(self) -> bool:
        return self.health.down

    def running_count(self) -> int:
        return len(self.firing.running)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def refusing(self) -> bool:
        return self.clocks.refusing
