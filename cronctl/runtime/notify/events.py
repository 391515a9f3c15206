"""Notifications (docs/behaviour.md#retention-notifications-and-metrics): which events happen, who
sends them, and their JSON.

The fire path calls the :class:`~cronctl.runtime.fire.watch.Watch` hooks of
:class:`Notifications` on the scheduler thread; each hook only looks up the job's
resolved ``notify`` (its table over the global ``[notify]``) and, when the event is
wanted, puts a small tuple on a bounded queue. The notification thread turns those into
events, asks the store what it must (did the previous occurrence fail? did another node
already send this decision?), checks for ``late`` occurrences about once a second, and
hands the events to :class:`~cronctl.runtime.notify.delivery.Delivery`.

Once per cluster: an execution's events come from the node that ran it (``recovered``
too). A decision several nodes may take alike (``late``, a ``missed`` set, a ``skipped``
instant) is sent by the node whose insert of the decision's key wins
(:meth:`~cronctl.store.base.Store.claim_notice`).
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from cronctl.core import CloseInterrupted, JobState, Missed, Skip
from cronctl.durations import format_duration
from cronctl.errors import first_line
from cronctl.ids import anomaly_of, occurrence_id, utc_iso
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Mode, Origin
from cronctl.jobs.notify import NotifySpec
from cronctl.runtime.fire.records import Run
from cronctl.runtime.logsetup import ids
from cronctl.runtime.notify.delivery import Delivery
from cronctl.runtime.notify.late import LateChecker
from cronctl.runtime.notify.longrun import LongRunning
from cronctl.store.base import ExecutionRecord, Store

log = logging.getLogger("cronctl.runtime")

INBOX_SIZE = 10_000  # events waiting for the notification thread before some are dropped
LATE_EVERY = 1.0  # seconds between late checks
FORGET_EVERY = 3600.0  # seconds between deletions of old marks
KEEP_MARKS = timedelta(days=1)  # no two nodes decide the same thing a day apart
SHUTDOWN_DRAIN = 5.0  # seconds given to queued events at stop
_BAD = (ExecutionStatus.FAILED, ExecutionStatus.ABANDONED, ExecutionStatus.DEAD_LETTER)
_STOP = ("stop",)
_SCHEDULED = (Origin.CRON, Origin.MISFIRE)
_ENDS = (ExecutionStatus.SUCCEEDED, ExecutionStatus.DEAD_LETTER)  # what says if a job works


def event(kind: str, job: str, node: str, at: datetime, *, occurrence: str | None = None,
          scheduled_at: datetime | None = None, execution_id: int | None = None,
          attempt: int | None = None, status: str | None = None, error: str | None = None,
          reason: str | None = None, count: int = 1) -> dict[str, Any]:
    """The event JSON of section 7, keys in its order, times as ISO 8601 with ``Z``."""
    return {"event": kind, "job": job, "occurrence_id": occurrence,
            "scheduled_at": None if scheduled_at is None else utc_iso(scheduled_at),
            "execution_id": execution_id, "attempt": attempt, "status": status,
            "error": error, "reason": reason, "count": count, "node": node,
            "at": utc_iso(at)}


class Notifications:
    """The notification side of the :class:`~cronctl.runtime.fire.watch.Watch`."""

    def __init__(self, *, base: NotifySpec, node_id: str, store: Store,
                 clock: Callable[[], datetime], job_of: Callable[[str], JobDefinition | None],
                 jobs: Callable[[], Sequence[JobDefinition]], store_down: Callable[[], bool],
                 failed: Callable[[], None] = lambda: None, delivery: Delivery | None = None,
                 threaded: bool = True) -> None:
        from cronctl import __version__

        self._base = base
        self._node = node_id
        self._store = store
        self._clock = clock
        self._job_of = job_of
        self._jobs = jobs
        self._store_down = store_down
        self._failed = failed
        self._inbox: queue.Queue[tuple[Any, ...]] = queue.Queue(INBOX_SIZE)
        self._full = False
        # job -> (its definition, the base it was resolved over, its resolved spec)
        self._specs: dict[str, tuple[JobDefinition, NotifySpec, NotifySpec | None]] = {}
        self._handled: dict[str, datetime] = {}  # job -> newest planned instant dealt with
        self._abandoned: set[int] = set()  # keys of attempts abandoned at their timeout
        self._outcomes: dict[str, tuple[datetime, ExecutionStatus]] = {}  # notify thread
        self._failing = False  # notify lanes: the last delivery failed
        self._late = LateChecker(store=store, handled=self._handled,
                                 occurrence_id=occurrence_id)
        self._long = LongRunning(store=store)  # notify thread
        # The jobs the late check watches, worked out once per job set (a walk of 10,000
        # jobs each second was most of an idle scheduler's notification thread).
        self._watched: tuple[object, object, list[JobDefinition]] = (None, None, [])
        self.delivery = delivery or Delivery(self._delivered, user_agent=f"cronctl/{__version__}")
        self._thread = threading.Thread(target=self._run, name="cronctl-notify", daemon=True)
        self._threaded = threaded  # False: the caller pumps (tests)

    # --- lifecycle ---------------------------------------------------------------------

    def begin(self, states: Mapping[str, JobState], now: datetime) -> None:
        """Before the first fire: each job's cursor is what it handled so far."""
        for job_id, state in states.items():
            if state.cursor is not None:
                self._handled[job_id] = state.cursor
        self._late.start(now)
        if self._threaded:
            self._thread.start()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        deadline = time.monotonic() + SHUTDOWN_DRAIN
        self._put(_STOP, force=True)
        self._thread.join(SHUTDOWN_DRAIN)
        if not self.delivery.close(max(0.5, deadline - time.monotonic())):
            log.warning("shutdown: some notifications were still being delivered")

    def rebase(self, base: NotifySpec) -> None:
        """SIGHUP read ``[notify]`` again: every event from now on is resolved over
        ``base`` (one assignment, safe from any thread; each job's spec is worked out
        again when next needed)."""
        self._base = base

    # --- the Watch hooks (scheduler thread) --------------------------------------------

    def loop(self, waiting: int) -> None:
        return None

    def started(self, run: Run) -> None:
        fire = run.fire
        if run.job.long_running_after is not None and self._wants(run.job, "long_running"):
            self._put(("running", run, run.started or self._clock()))
        if fire.attempt != 1 or fire.origin not in _SCHEDULED:
            return
        self.handled(fire.job_id, fire.planned)
        late_after = run.job.late_after
        if late_after is not None and fire.origin is Origin.CRON:
            at = run.started or self._clock()
            if at - fire.planned > late_after and self._wants(run.job, "late"):
                self._put(("late", run.job, fire.planned, at))

    def handled(self, job_id: str, planned: datetime) -> None:
        """A planned instant of ``job_id`` was dealt with (started, skipped, run elsewhere)."""
        old = self._handled.get(job_id)
        if old is None or planned > old:
            self._handled[job_id] = planned

    def finished(self, run: Run, status: ExecutionStatus, error: str | None) -> None:
        abandoned = run.fire.key in self._abandoned
        if abandoned:
            self._abandoned.discard(run.fire.key)
        spec = self._spec(run.job)
        if spec is not None:
            self._put(("finished", run, status, error, abandoned, self._clock()))

    def abandoned(self, run: Run) -> None:
        self._abandoned.add(run.fire.key)
        if self._wants(run.job, "abandoned"):
            self._put(("abandoned", run, self._clock()))

    def interrupted(self, a: CloseInterrupted) -> None:
        job = self._job_of(a.job_id)
        if job is not None and self._spec(job) is not None:
            self._put(("interrupted", job, a, self._clock()))

    def skipped(self, a: Skip) -> None:
        if a.origin in _SCHEDULED:
            self.handled(a.job_id, getattr(a, "last", None) or a.planned)
        if not a.reported:
            return
        job = self._job_of(a.job_id)
        if job is not None and self._wants(job, "skipped"):
            self._put(("skipped", job, a, self._clock()))

    def missed(self, a: Missed) -> None:
        after = self._handled.get(a.job_id)  # the set starts after what was handled
        self.handled(a.job_id, a.newest)
        job = self._job_of(a.job_id)
        if a.dropped and job is not None and self._wants(job, "missed"):
            self._put(("missed", job, a, after, self._clock()))

    def fenced(self, row: ExecutionRecord, status: ExecutionStatus, at: datetime) -> None:
        """(I/O thread; the inbox is a thread-safe queue.)"""
        job = self._job_of(row.job_id)
        if job is not None and self._wants(job, "fenced"):
            self._put(("fenced", job, row, status, at))
        if job is not None and anomaly_of(row.error) and self._wants(job, "anomaly"):
            self._put(("anomaly", job, row, status, at))

    def _spec(self, job: JobDefinition) -> NotifySpec | None:
        """The job's resolved notify, or None when it has nowhere to send to."""
        base = self._base  # (read once: rebase may replace it from another thread)
        got = self._specs.get(job.id)
        if got is None or got[0] is not job or got[1] is not base:
            spec = job.notify.over(base) if job.notify is not None else base
            got = self._specs[job.id] = (job, base, spec if spec.active else None)
        return got[2]

    def _wants(self, job: JobDefinition, kind: str) -> bool:
        spec = self._spec(job)
        return spec is not None and kind in spec.events

    def _put(self, item: tuple[Any, ...], *, force: bool = False) -> None:
        try:
            if force:
                self._inbox.put(item, timeout=SHUTDOWN_DRAIN)
            else:
                self._inbox.put_nowait(item)
            self._full = False
        except queue.Full:
            if not self._full:
                self._full = True
                log.warning("notifications are not keeping up (%d waiting): dropping new "
                            "events until there is room", INBOX_SIZE)
            self._failed()

    # --- the notification thread -------------------------------------------------------

    def _run(self) -> None:
        next_late = time.monotonic() + LATE_EVERY
        next_forget = time.monotonic() + 60.0
        while True:
            try:
                item = self._inbox.get(timeout=max(0.0, next_late - time.monotonic()))
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            try:
                if item is not None:
                    self._route(item)
                    self.pump()
                mono = time.monotonic()
                if mono >= next_late:
                    next_late = mono + LATE_EVERY
                    self.check_late()
                if mono >= next_forget and not self._store_down():
                    next_forget = mono + FORGET_EVERY
                    self._store.forget_notices(self._clock() - KEEP_MARKS)
            except Exception as exc:  # nothing here may end the thread
                log.warning("notifications: %s", first_line(exc))

    def pump(self) -> bool:
        """Route every event already queued (the thread's work; tests call it directly).
        False once the stop sentinel was taken."""
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return True
            if item is _STOP:
                self._inbox.put(_STOP)  # the loop sees it next
                return False
            self._route(item)

    def check_late(self) -> None:
        """Look for late occurrences and long-running attempts now (the thread does, once
        a second)."""
        if len(self._long):
            now = self._clock()
            for run, limit in self._long.due(now):
                self._send_run("long_running", run, ExecutionStatus.RUNNING, None, now,
                               reason=f"running for more than {format_duration(limit)}")
        if not self._store_down():
            self._check_late()

    def _route(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "finished":
            self._finished(*item[1:])
        elif kind == "abandoned":
            run, at = item[1:]
            limit = run.job.timeout
            self._send_run("abandoned", run, ExecutionStatus.ABANDONED,
                           f"timed out after {format_duration(limit)}" if limit else None, at)
        elif kind == "late":
            job, planned, at = item[1:]
            self._late_one(job, planned, at)
        elif kind == "fenced":
            job, row, status, at = item[1:]
            self._send(job, event("fenced", job.id, self._node, at,
                                  occurrence=row.occurrence_id, scheduled_at=row.scheduled_at,
                                  execution_id=row.id, attempt=row.attempt,
                                  status=status.value, error=row.error,
                                  reason=f"{status.value} after the attempt was taken over "
                                         f"(recorded {row.status.value}); not counted"))
        elif kind == "anomaly":
            job, row, status, at = item[1:]
            self._send(job, event("anomaly", job.id, self._node, at,
                                  occurrence=row.occurrence_id, scheduled_at=row.scheduled_at,
                                  execution_id=row.id, attempt=row.attempt,
                                  status=row.status.value, error=row.error,
                                  reason=anomaly_of(row.error)))
        elif kind == "running":
            run, at = item[1:]
            self._long.started(run, at)
        elif kind == "skipped":
            job, a, at = item[1:]
            scope = self._node if job.mode is Mode.EVERY_INSTANCE else ""
            # Keyed by the instant, as its skip record is: two nodes may give one instant
            # different reasons (one sees the job's lock held, one its serial group busy).
            if self._claim("skipped", job.id, scope, utc_iso(a.planned)):
                self._send(job, event("skipped", job.id, self._node, at,
                                      occurrence=occurrence_id(job.id, a.planned),
                                      scheduled_at=a.planned, status="skipped",
                                      reason=a.reason.value, count=getattr(a, "count", 1)))
        elif kind == "missed":
            job, a, after, at = item[1:]
            scope = self._node if job.mode is Mode.EVERY_INSTANCE else ""
            start = utc_iso(after) if after is not None else f"newest {utc_iso(a.newest)}"
            if self._claim("missed", job.id, scope, start):
                self._send(job, event("missed", job.id, self._node, at, scheduled_at=a.newest,
                                      status="skipped", reason="misfire", count=a.dropped))
        elif kind == "interrupted":
            job, a, at = item[1:]
            self._interrupted(job, a, at)

    def _finished(self, run: Run, status: ExecutionStatus, error: str | None,
                  abandoned: bool, at: datetime) -> None:
        self._long.ended(run)
        if status is ExecutionStatus.SUCCEEDED:
            self._send_run("succeeded", run, status, error, at)
            if self._wants(run.job, "recovered") and self._after_failure(run):
                self._send_run("recovered", run, status, error, at)
        elif status is ExecutionStatus.FAILED:
            self._send_run("failed", run, status, error, at)
        elif status is ExecutionStatus.CANCELLED:
            self._send_run("cancelled", run, status, error, at)
        elif status is ExecutionStatus.DEAD_LETTER:
            if not abandoned:  # a timeout said "abandoned" already
                self._send_run("failed", run, status, error, at)
            self._send_run("dead_letter", run, status, error, at)
        if status in _ENDS:
            self._outcome(run.job.id, run.fire.planned, status)

    def _outcome(self, job_id: str, planned: datetime, status: ExecutionStatus) -> None:
        """An occurrence of ``job_id`` ended (a failed attempt is retried; a cancelled one
        says nothing about whether the job works)."""
        old = self._outcomes.get(job_id)
        if old is None or old[0] <= planned:
            self._outcomes[job_id] = (planned, status)

    def _after_failure(self, run: Run) -> bool:
        """Did the job's previous occurrence (this node's, or the cluster's for a job
        whose rows any node writes) end failed, abandoned or dead_letter?"""
        planned = run.fire.planned
        mine = self._outcomes.get(run.job.id)
        previous = mine if mine is not None and mine[0] < planned else None
        if run.execution_id is not None:
            scope = self._node if run.job.mode is Mode.EVERY_INSTANCE else None
            try:
                stored = self._store.previous_outcome(run.job.id, planned, scope_node=scope)
            except Exception as exc:
                log.debug("notifications: previous outcome of %s unknown: %s", run.job.id,
                          first_line(exc))
                stored = None
            if stored is not None and (previous is None or stored[0] > previous[0]):
                previous = stored
        return previous is not None and previous[1] in _BAD

    def _late_one(self, job: JobDefinition, planned: datetime, at: datetime) -> None:
        occ = occurrence_id(job.id, planned)
        if self._claim("late", job.id, occ):
            assert job.late_after is not None
            self._send(job, event("late", job.id, self._node, at, occurrence=occ,
                                  scheduled_at=planned,
                                  reason=f"not started {format_duration(job.late_after)} "
                                         "after its planned instant"))

    def _check_late(self) -> None:
        jobs = self._jobs()
        base = self._base
        if self._watched[0] is not jobs or self._watched[1] is not base:  # (reloads)
            self._watched = (jobs, base, [j for j in jobs if j.enabled and
                                          j.late_after is not None and self._wants(j, "late")])
        watched = self._watched[2]
        now = self._clock()
        for job, planned in self._late.due(watched, now):
            self._late_one(job, planned, now)

    def _interrupted(self, job: JobDefinition, a: CloseInterrupted, at: datetime) -> None:
        row = self._store.get_execution(a.execution_id)
        fields: dict[str, Any] = {"execution_id": a.execution_id, "status": a.status.value,
                                  "error": row.error if row is not None else None}
        if row is not None:
            fields.update(occurrence=row.occurrence_id, scheduled_at=row.scheduled_at,
                          attempt=row.attempt)
            if a.status in (ExecutionStatus.DEAD_LETTER, ExecutionStatus.CANCELLED):
                self._outcome(job.id, row.scheduled_at, a.status)
        if a.status is not ExecutionStatus.DEAD_LETTER:
            return  # lost: how it ended is unknown, and its next attempt follows
        if self._wants(job, "failed"):
            self._send(job, event("failed", job.id, self._node, at, **fields))
        if self._wants(job, "dead_letter"):
            self._send(job, event("dead_letter", job.id, self._node, at, **fields))

    def _send_run(self, kind: str, run: Run, status: ExecutionStatus, error: str | None,
                  at: datetime, *, reason: str | None = None) -> None:
        if not self._wants(run.job, kind):
            return
        fire = run.fire
        self._send(run.job, event(kind, run.job.id, self._node, at,
                                  occurrence=fire.occurrence_id, scheduled_at=fire.planned,
                                  execution_id=run.execution_id, attempt=fire.attempt,
                                  status=status.value, error=error, reason=reason))

    def _send(self, job: JobDefinition, doc: dict[str, Any]) -> None:
        spec = self._spec(job)
        if spec is not None:
            log.debug("notify event=%s job=%s", doc["event"], job.id,
                      extra=ids(job.id, doc["execution_id"]))
            self.delivery.send(spec, doc)

    def _claim(self, kind: str, job_id: str, *parts: str) -> bool:
        """Whether this node sends a decision's event: the first to claim its key does.
        When the store cannot say, send (twice is better than never)."""
        key = hashlib.sha256("\n".join((kind, job_id, *parts)).encode()).hexdigest()
        try:
            return self._store.claim_notice(key, event=kind, job_id=job_id,
                                            node_id=self._node, now=self._clock())
        except Exception as exc:
            log.debug("notifications: cannot claim %s of %s: %s", kind, job_id,
                      first_line(exc))
            return True

    # --- delivery results (lane threads) -------------------------------------------------

    def _delivered(self, ok: bool, why: str | None) -> None:
        if not ok:
            self._failed()
        if ok and not self._failing:
            return
        self._failing = not ok
        try:
            self._store.note_delivery(self._node, ok=ok, error=why, now=self._clock())
        except Exception as exc:
            log.debug("notifications: cannot record the delivery state: %s", first_line(exc))
