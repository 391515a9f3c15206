"""The threadless scheduler core: definitions + store state + ``now`` in, actions out.

One heap of ``(due_utc, seq, kind, ...)`` entries holds each enabled job's next planned
instant, retries waiting for their backoff, and attempt deadlines, so a tick costs
O(k log n) for the k entries due, never a scan of all jobs. Every public method returns
a :class:`Decision`; nothing here reads the clock, sleeps, or does I/O.

The guards a fire passes, in order (the Java scheduler's order, SPEC section 3):

1. *job*: overlap policy. ``skip`` drops a cron fire while the job has an occurrence in
   flight; ``queue_one`` keeps only the newest such fire and admits it when the job is
   free; ``allow`` admits. An occurrence stays in flight through its retries' backoff,
   so a retry never overlaps a newer fire. Explicit fires (manual, replay, misfire
   catch-up, recovery) are never dropped by overlap: they wait for the job, FIFO.
2. *serial group*: one occurrence per group at a time; the rest wait FIFO per group.
3. *slot*: at most ``max_concurrent_jobs`` attempts start; the rest wait FIFO.

Only a started attempt (:class:`Fire`) holds a slot; the runtime gives it back with
``on_complete`` (it ran) or ``release`` (it never started: lost election, unresolvable
target, store error), so no failure path can leak a slot or strand a job.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from cronctl.core.actions import (
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
    JobState,
    Missed,
    RecoveredExecution,
    Retry,
    Skip,
    SkipReason,
    WaitReason,
)
from cronctl.core.errors import ClockSkewError
from cronctl.core.state import Active as _Active
from cronctl.core.state import Job as _Job
from cronctl.core.state import Pending as _Pending
from cronctl.core.timing import (
    OccurrenceIds,
    ScheduleLike,
    jitter_offset,
    missed_between,
    schedule_for,
)
from cronctl.errors import NotFoundError
from cronctl.jobs.model import (
    ExecutionStatus,
    JobDefinition,
    MisfirePolicy,
    Origin,
    OverlapPolicy,
)

_FIRE, _RETRY, _TIMEOUT = 0, 1, 2
_FAILURES = (ExecutionStatus.FAILED, ExecutionStatus.ABANDONED)
_SCHEDULED_ORIGINS = (Origin.CRON, Origin.MISFIRE)


class SchedulerCore:
    """Decides what fires, waits, retries, times out and is missed. See the module doc.

    ``durable`` is False for the memory store: nothing was persisted, so misfires are
    always skipped. ``schedule_factory`` and ``occurrence_ids`` exist for tests."""

    def __init__(
        self,
        jobs: Iterable[JobDefinition],
        *,
        max_concurrent_jobs: int = 10,
        clock_skew_limit: timedelta = timedelta(minutes=5),
        durable: bool = True,
        schedule_factory: Callable[[JobDefinition], ScheduleLike] = schedule_for,
        occurrence_ids: Callable[[str, datetime], str] | None = None,
    ) -> None:
        self._max = max(1, max_concurrent_jobs)
        self._skew = clock_skew_limit
        self._durable = durable
        self._make_schedule = schedule_factory
        self._occ = occurrence_ids or OccurrenceIds()
        self._jobs: dict[str, _Job] = {j.id: _Job(j, self._schedule(j)) for j in jobs}
        self._heap: list[tuple[datetime, int, int, str, int, object]] = []
        self._seq = 0
        self._next_key = 0
        self._active: dict[ExecKey, _Active] = {}
        self._running = 0
        self._slot_wait: deque[_Pending] = deque()
        self._group_busy: set[str] = set()
        self._group_wait: dict[str, deque[_Pending]] = {}
        self._high: tuple[datetime, str] | None = None  # newest cursor seen: (instant, job)

    # --- queries -----------------------------------------------------------------------

    @property
    def running(self) -> int:
        """Attempts holding a slot."""
        return self._running

    @property
    def waiting(self) -> int:
        """Attempts waiting for a slot or a serial group."""
        return len(self._slot_wait) + sum(len(q) for q in self._group_wait.values())

    def active_keys(self) -> list[ExecKey]:
        return list(self._active)

    def next_wake(self) -> datetime | None:
        return self._heap[0][0] if self._heap else None

    def job(self, job_id: str) -> JobDefinition | None:
        js = self._jobs.get(job_id)
        return None if js is None else js.job

    # --- events ------------------------------------------------------------------------

    def start(
        self,
        now: datetime,
        states: Mapping[str, JobState] | None = None,
        recovered: Sequence[RecoveredExecution] = (),
    ) -> Decision:
        """Start-up: refuse on clock skew (before changing anything), recover interrupted
        executions, then apply each job's misfire policy to the instants after its
        cursor, then schedule every job's next instant."""
        states = states or {}
        for job_id in sorted(states):
            cursor = states[job_id].cursor
            if cursor is not None and cursor - now > self._skew:
                raise ClockSkewError(job_id, cursor, now, self._skew)
        out: list[Action] = []
        for job_id, st in states.items():
            js = self._jobs.get(job_id)
            if js is not None:
                js.paused = st.paused
                js.handled = st.cursor if self._durable else None
            if st.cursor is not None:
                self._raise_high(st.cursor, job_id)
        self._recover(recovered, now, out)
        for job_id in sorted(self._jobs):
            js = self._jobs[job_id]
            if js.schedule is None:
                continue
            if js.handled is not None and self._durable and js.job.tracked:
                self._catch_up(js, js.handled, now - js.job.misfire_threshold, now, out)
            # From the cursor, not from now: instants since then that are late by less than
            # misfire_threshold are not missed, and fire on the first tick.
            self._push_next(js, now if js.handled is None else js.handled)
        return self._decision(out)

    def tick(self, now: datetime) -> Decision:
        """Handle every heap entry due at or before ``now``."""
        self._check_skew(now)
        out: list[Action] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            due, _, kind, job_id, gen, obj = heapq.heappop(heap)
            if kind == _FIRE:
                assert isinstance(obj, datetime)
                self._on_planned(job_id, gen, obj, due, now, out)
            elif kind == _RETRY:
                assert isinstance(obj, _Pending)
                self._on_retry(obj, now, out)
            else:
                assert isinstance(obj, int)
                self._on_timeout(obj, now, out)
        return self._decision(out)

    def on_complete(
        self, key: ExecKey, status: ExecutionStatus, error: str | None, now: datetime
    ) -> Decision:
        """An attempt ended. Unknown keys (already abandoned at their timeout) are ignored."""
        out: list[Action] = []
        act = self._active.pop(key, None)
        if act is not None:
            self._ended(act, status, error, now, out)
        return self._decision(out)

    def release(self, key: ExecKey, now: datetime) -> Decision:
        """The attempt of a :class:`Fire` never started (another node won the election, the
        target did not resolve, the store or an interceptor failed): free its guards and
        drop the occurrence without a status."""
        out: list[Action] = []
        act = self._active.pop(key, None)
        if act is not None:
            self._free_guards(act.p, now, out)
            self._occurrence_done(act.p.js, now, out)
        return self._decision(out)

    def defer(self, key: ExecKey, now: datetime, until: datetime) -> Decision:
        """The attempt could not start yet (a cluster-wide guard is held on another node):
        free its guards and try the same attempt again at ``until``."""
        out: list[Action] = []
        act = self._active.pop(key, None)
        if act is not None:
            self._free_guards(act.p, now, out)
            self._push(until, _RETRY, act.p.js.job.id, 0, act.p)
        return self._decision(out)

    def trigger(
        self,
        job_id: str,
        now: datetime,
        *,
        planned: datetime | None = None,
        origin: Origin = Origin.MANUAL,
    ) -> tuple[str, Decision]:
        """Run one occurrence now (manual: planned = ``now``; replay: the given instant).
        Returns its occurrence id. Paused and disabled jobs run too: the operator asked."""
        js = self._jobs.get(job_id)
        if js is None:
            raise NotFoundError(f"no job {job_id!r}")
        at = now if planned is None else planned
        occurrence = self._occ(job_id, at)
        p = _Pending(js, at, now, 1, origin, occurrence)
        out: list[Action] = []
        self._offer_explicit(p, now, out)
        return occurrence, self._decision(out)

    def recover(self, recovered: Sequence[RecoveredExecution], now: datetime) -> Decision:
        """Executions of a node whose heartbeat expired: same occurrence, next attempt."""
        out: list[Action] = []
        self._recover(recovered, now, out)
        return self._decision(out)

    def set_paused(self, job_id: str, paused: bool) -> None:
        js = self._jobs.get(job_id)
        if js is not None:
            js.paused = paused

    def reload(self, jobs: Iterable[JobDefinition], now: datetime) -> Decision:
        """Swap definitions. Running attempts finish; fires already admitted to a slot or
        group queue still run with their old definition; a removed job's queued and
        waiting fires are dropped. Changed jobs continue after the newest handled
        instant (a reload never re-fires or catches up)."""
        out: list[Action] = []
        new = {j.id: j for j in jobs}
        for job_id in list(self._jobs):
            if job_id not in new:
                gone = self._jobs.pop(job_id)
                gone.removed = True
                gone.gen += 1
                self._drop_waiting(gone, out)
        for job_id, job in new.items():
            js = self._jobs.get(job_id)
            if js is None:
                js = self._jobs[job_id] = _Job(job, self._schedule(job))
            elif js.job == job:
                continue
            else:
                js.job = job
                js.schedule = self._schedule(job)
                js.gen += 1
            if js.schedule is not None:
                self._push_next(js, now if js.handled is None else max(js.handled, now))
        return self._decision(out)

    # --- heap handlers -----------------------------------------------------------------

    def _on_planned(
        self, job_id: str, gen: int, planned: datetime, due: datetime, now: datetime,
        out: list[Action],
    ) -> None:
        js = self._jobs.get(job_id)
        if js is None or js.gen != gen or js.schedule is None:
            return
        if js.handled is not None and planned <= js.handled:
            # Recovery already took this instant: never fire a handled instant twice.
            self._push_next(js, js.handled)
            return
        threshold = js.job.misfire_threshold
        if now - due > threshold:
            # The scheduler stalled (store outage, suspended host, clock jump): treat the
            # whole run of late instants as one misfire batch, then resume normally.
            floor = js.handled if js.handled is not None else planned - timedelta(microseconds=1)
            self._catch_up(js, floor, max(planned, now - threshold), now, out)
            self._push_next(js, js.handled if js.handled is not None else planned)
            return
        js.handled = planned
        self._raise_high(planned, job_id)
        self._push_next(js, planned)
        p = _Pending(js, planned, due, 1, Origin.CRON)  # occurrence id: when it starts
        self._offer_cron(p, now, out)

    def _on_retry(self, p: _Pending, now: datetime, out: list[Action]) -> None:
        if p.js.removed:
            out.append(Skip(p.js.job.id, p.planned, p.origin, SkipReason.REMOVED))
            p.js.in_flight -= 1
            return
        self._admit(p, now, out)

    def _on_timeout(self, key: ExecKey, now: datetime, out: list[Action]) -> None:
        act = self._active.pop(key, None)
        if act is None:
            return
        out.append(Abandon(key, act.p.js.job.id))
        limit = act.p.js.job.timeout
        self._ended(act, ExecutionStatus.ABANDONED, f"timed out after {limit}", now, out)

    # --- misfires and recovery -----------------------------------------------------------

    def _catch_up(
        self, js: _Job, after: datetime, cut: datetime, now: datetime, out: list[Action]
    ) -> None:
        """Apply the misfire policy to the instants in ``(after, cut]``; later ones (up to
        ``now``) are merely late and fire normally from the heap."""
        assert js.schedule is not None
        job = js.job
        policy = job.misfire_policy if self._durable and job.tracked else MisfirePolicy.SKIP
        keep = job.catchup_limit if policy is MisfirePolicy.FIRE_ALL else 1
        count, newest, exact = missed_between(js.schedule, after, cut, keep)
        if not count:
            return
        js.handled = newest[-1]
        self._raise_high(newest[-1], job.id)
        if policy is MisfirePolicy.SKIP:
            out.append(Missed(job.id, policy, count, count, newest[-1], exact))
            out.append(AdvanceCursor(job.id, newest[-1]))
            return
        out.append(Missed(job.id, policy, count, count - len(newest), newest[-1], exact))
        for planned in newest:
            p = _Pending(js, planned, now, 1, Origin.MISFIRE)
            if js.paused:
                out.append(Skip(job.id, planned, Origin.MISFIRE, SkipReason.PAUSED))
            else:
                self._offer_explicit(p, now, out)

    def _recover(
        self, recovered: Sequence[RecoveredExecution], now: datetime, out: list[Action]
    ) -> None:
        for r in sorted(recovered, key=lambda r: (r.planned, r.execution_id)):
            js = self._jobs.get(r.job_id)
            # A pending row never ran, so its attempt was not used up.
            used = r.status is ExecutionStatus.RUNNING
            if js is None or (used and r.attempt >= js.job.max_attempts):
                out.append(CloseInterrupted(r.execution_id, r.job_id, ExecutionStatus.DEAD_LETTER))
                continue
            out.append(CloseInterrupted(r.execution_id, r.job_id, ExecutionStatus.FAILED))
            if r.origin in _SCHEDULED_ORIGINS and (js.handled is None or r.planned > js.handled):
                js.handled = r.planned  # so the misfire policy starts after it
            p = _Pending(js, r.planned, now, r.attempt + 1, r.origin, None, r.execution_id)
            self._offer_explicit(p, now, out)

    # --- guards --------------------------------------------------------------------------

    def _offer_cron(self, p: _Pending, now: datetime, out: list[Action]) -> None:
        js = p.js
        if js.paused:
            out.append(Skip(js.job.id, p.planned, p.origin, SkipReason.PAUSED))
            return
        policy = js.job.overlap_policy
        if policy is not OverlapPolicy.ALLOW and (js.in_flight or js.waiting):
            if policy is OverlapPolicy.SKIP:
                out.append(Skip(js.job.id, p.planned, p.origin, SkipReason.OVERLAP))
                return
            old = js.queued
            if old is not None:
                out.append(Skip(js.job.id, old.planned, old.origin, SkipReason.SUPERSEDED))
            js.queued = p
            out.append(Enqueue(js.job.id, p.planned, p.origin, WaitReason.QUEUE_ONE))
            return
        js.in_flight += 1
        self._admit(p, now, out)

    def _offer_explicit(self, p: _Pending, now: datetime, out: list[Action]) -> None:
        js = p.js
        if js.job.overlap_policy is not OverlapPolicy.ALLOW and (js.in_flight or js.waiting):
            js.waiting.append(p)
            out.append(Enqueue(js.job.id, p.planned, p.origin, WaitReason.JOB))
            return
        js.in_flight += 1
        self._admit(p, now, out)

    def _admit(self, p: _Pending, now: datetime, out: list[Action]) -> None:
        group = p.js.job.serial_group
        if group is not None:
            if group in self._group_busy:
                self._group_wait.setdefault(group, deque()).append(p)
                out.append(Enqueue(p.js.job.id, p.planned, p.origin, WaitReason.GROUP))
                return
            self._group_busy.add(group)  # reserved from here until the attempt ends
            p.group = group
        if self._running >= self._max or self._slot_wait:
            self._slot_wait.append(p)
            out.append(Enqueue(p.js.job.id, p.planned, p.origin, WaitReason.SLOT))
            return
        self._start(p, now, out)

    def _start(self, p: _Pending, now: datetime, out: list[Action]) -> None:
        self._running += 1
        key = self._next_key = self._next_key + 1
        self._active[key] = _Active(key, p, now)
        job = p.js.job
        occ = p.occurrence_id
        if occ is None:
            occ = p.occurrence_id = self._occ(job.id, p.planned)
        out.append(Fire(key, job.id, p.planned, p.due, p.attempt, p.origin, occ,
                        p.recovered_from))
        if job.timeout is not None and job.timeout > timedelta(0):
            self._push(now + job.timeout, _TIMEOUT, job.id, 0, key)

    def _ended(
        self, act: _Active, status: ExecutionStatus, error: str | None, now: datetime,
        out: list[Action],
    ) -> None:
        p = act.p
        job = p.js.job
        retrying = False
        if status in _FAILURES:
            if p.attempt < job.max_attempts:
                retrying = True
                out.append(Finish(act.key, job.id, status, error))
                due = now + job.retry_backoff * (2 ** (p.attempt - 1))
                nxt = _Pending(p.js, p.planned, due, p.attempt + 1, p.origin, p.occurrence_id)
                self._push(due, _RETRY, job.id, 0, nxt)
                out.append(Retry(job.id, p.planned, p.attempt + 1, due))
            else:
                out.append(DeadLetter(act.key, job.id, error))
        else:
            out.append(Finish(act.key, job.id, status, error))
        self._free_guards(p, now, out)
        if not retrying:
            self._occurrence_done(p.js, now, out)

    def _free_guards(self, p: _Pending, now: datetime, out: list[Action]) -> None:
        self._running -= 1
        group, p.group = p.group, None
        if group is not None:
            self._group_busy.discard(group)
            queue = self._group_wait.get(group)
            if queue:
                nxt = queue.popleft()
                if not queue:
                    del self._group_wait[group]
                self._group_busy.add(group)
                nxt.group = group
                self._slot_wait.append(nxt)
        while self._slot_wait and self._running < self._max:
            self._start(self._slot_wait.popleft(), now, out)

    def _occurrence_done(self, js: _Job, now: datetime, out: list[Action]) -> None:
        js.in_flight -= 1
        if js.in_flight or js.job.overlap_policy is OverlapPolicy.ALLOW:
            return
        if js.removed:
            self._drop_waiting(js, out)
            return
        if js.waiting:
            p = js.waiting.popleft()
        elif js.queued is not None:
            p = js.queued
            js.queued = None
        else:
            return
        js.in_flight += 1
        self._admit(p, now, out)

    def _drop_waiting(self, js: _Job, out: list[Action]) -> None:
        for p in (*js.waiting, *((js.queued,) if js.queued else ())):
            out.append(Skip(js.job.id, p.planned, p.origin, SkipReason.REMOVED))
        js.waiting.clear()
        js.queued = None

    # --- plumbing --------------------------------------------------------------------------

    def _schedule(self, job: JobDefinition) -> ScheduleLike | None:
        return self._make_schedule(job) if job.enabled else None

    def _push_next(self, js: _Job, after: datetime) -> None:
        assert js.schedule is not None
        planned = js.schedule.next_after(after)
        if planned is None:
            return
        due = planned
        if js.job.jitter:
            due += jitter_offset(self._occ(js.job.id, planned), js.job.jitter)
        self._push(due, _FIRE, js.job.id, js.gen, planned)

    def _push(self, due: datetime, kind: int, job_id: str, gen: int, obj: object) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, kind, job_id, gen, obj))

    def _raise_high(self, instant: datetime, job_id: str) -> None:
        if self._high is None or instant > self._high[0]:
            self._high = (instant, job_id)

    def _check_skew(self, now: datetime) -> None:
        # A clock that went back a little just waits (heap entries are in its future and
        # cursors never move back); one that went back past the limit must not act.
        if self._high is not None and self._high[0] - now > self._skew:
            raise ClockSkewError(self._high[1], self._high[0], now, self._skew)

    def _decision(self, out: list[Action]) -> Decision:
        return Decision(tuple(out), self._heap[0][0] if self._heap else None)
