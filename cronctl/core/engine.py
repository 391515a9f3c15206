"""The threadless scheduler core: definitions + store state + ``now`` in, actions out.

One heap of ``(due_utc, seq, kind, ...)`` entries holds each enabled job's next planned
instant; a second one, on the driver's monotonic clock, holds retries waiting for their
backoff and attempt deadlines; so a tick costs O(k log n) for the k entries due, never a
scan of all jobs. Every public method returns
a :class:`Decision`; nothing here reads a clock, sleeps, or does I/O.

The guards every attempt passes are in :mod:`cronctl.core.guards`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from cronctl.core.actions import (
    Abandon,
    Action,
    Decision,
    ExecKey,
    JobState,
    RecoveredExecution,
    Skip,
    SkipReason,
)
from cronctl.core.errors import ClockSkewError, refuse_on_skew
from cronctl.core.guards import _FIRE, _RETRY, first_scheduled
from cronctl.core.misfires import decide
from cronctl.core.recovery import Recovery
from cronctl.core.state import Job as _Job
from cronctl.core.state import Pending as _Pending
from cronctl.core.timing import OccurrenceIds, ScheduleLike, jitter_offset, schedule_for
from cronctl.durations import format_duration
from cronctl.errors import NotFoundError
from cronctl.jobs.model import (
    ExecutionStatus,
    JobDefinition,
    Origin,
    OverlapPolicy,
)

_TICK = timedelta(microseconds=1)


class SchedulerCore(Recovery):
    """Decides what fires, waits, retries, times out and is missed. See the module doc.

    ``durable`` is False for ``database = "none"``: nothing was persisted, so misfires are
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
        super().__init__(max_concurrent_jobs, occurrence_ids or OccurrenceIds())
        self._skew = clock_skew_limit
        self._durable = durable
        self._make_schedule = schedule_factory
        # Equal schedules are shared, so the jobs of a burst (same schedule, same instant)
        # compute their next instant once: ``_push_next`` remembers the last answer.
        self._schedules: dict[ScheduleLike, ScheduleLike] = {}
        self._memo: tuple[ScheduleLike, datetime, datetime | None] | None = None
        self._jobs: dict[str, _Job] = {j.id: _Job(j, self._schedule(j)) for j in jobs}
        self._high: tuple[datetime, str] | None = None  # newest cursor seen: (instant, job)

    # --- queries -----------------------------------------------------------------------

    @property
    def running(self) -> int:
        """Attempts holding a slot."""
        return self._running

    def active_keys(self) -> list[ExecKey]:
        return list(self._active)

    def job(self, job_id: str) -> JobDefinition | None:
        js = self._jobs.get(job_id)
        return None if js is None else js.job

    # --- events ------------------------------------------------------------------------

    def start(
        self,
        now: datetime,
        states: Mapping[str, JobState] | None = None,
        recovered: Sequence[RecoveredExecution] = (),
        *,
        mono: float | None = None,
    ) -> Decision:
        """Start-up: refuse on clock skew (before changing anything), recover interrupted
        executions, then apply each job's misfire policy to the set of instants after its
        cursor (see :meth:`_misfire_set`), then schedule every job's next instant."""
        states = states or {}
        refuse_on_skew(states, now, self._skew)
        self._at(now, mono)
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
            if js.handled is not None:
                self._misfire_set(js, js.handled, now, out)
            # From the cursor (or the newest instant of a missed set), not from now: a set
            # that was not missed fires, late, from the first tick.
            self._push_next(js, now if js.handled is None else js.handled)
        return self._decision(out)

    def tick(self, now: datetime, *, mono: float | None = None,
             budget: int | None = None) -> Decision:
        """Handle every entry due at or before ``now`` (planned instants) or ``mono``
        (retries and deadlines: see :meth:`~cronctl.core.guards.Guards._push`).

        ``mono``, here and on every other event, is the driver's monotonic clock in
        seconds; pass it on every event or on none (then it is counted from ``now``).
        ``budget``: handle at most that many entries; the rest stay due (``next_wake``
        is then not after ``now``), so a driver can start the first fires of a large
        burst before deciding the others."""
        self._check_skew(now)
        self._at(now, mono)
        out: list[Action] = []
        heap, m = self._heap, self._mono
        self._note_stall(now)
        left = -1 if budget is None else max(budget, 1)
        while left:
            left -= 1
            entry: tuple[datetime, int, int, str, int, object] | None
            if heap and heap[0][0] <= now and not (self._timers and self._timers[0][0] <= m):
                entry = heapq.heappop(heap)  # the hot path: only planned instants due
            else:
                entry = self._next_entry(now, m)
                if entry is None:
                    break
            due, _, kind, job_id, gen, obj = entry
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

    def tick_ahead(self, at: datetime, *, mono: float | None = None,
                   budget: int | None = None) -> Decision:
        """Decide the planned instants due by ``at`` (a moment from now) ahead of time, as
        :meth:`tick` at ``at`` would: a :class:`Fire` carries its ``due`` and the driver
        holds it until then (a large burst's fires are ready when it comes). Timers
        (retries, deadlines) are left to :meth:`tick`."""
        self._check_skew(at)
        self._at(at, mono)
        out: list[Action] = []
        heap = self._heap
        left = -1 if budget is None else max(budget, 1)
        while left and heap and heap[0][0] <= at:
            left -= 1
            due, _, _kind, job_id, gen, obj = heapq.heappop(heap)
            assert isinstance(obj, datetime)
            self._on_planned(job_id, gen, obj, due, at, out)
        return self._decision(out)

    def on_complete(
        self, key: ExecKey, status: ExecutionStatus, error: str | None, now: datetime,
        *, mono: float | None = None, retryable: bool = True,
    ) -> Decision:
        """An attempt ended (unknown keys: abandoned at their timeout, ignored). A failure
        not ``retryable`` (command not found) is ``dead_letter`` at once."""
        self._at(now, mono)
        out: list[Action] = []
        act = self._active.pop(key, None)
        if act is not None:
            self._ended(act, status, error, now, out, retryable=retryable)
        return self._decision(out)

    def release(self, key: ExecKey, now: datetime, *, skip: SkipReason | None = None,
                mono: float | None = None) -> Decision:
        """The attempt of a :class:`Fire` never started (another node won the election, the
        target did not resolve, the store or an interceptor failed): free its guards and
        drop the occurrence without a status.

        ``skip`` names why, when the instant must get a skip record: the runtime passes
        :attr:`SkipReason.UNRESOLVED_TARGET` for a target that does not resolve, and the
        decision then starts with that :class:`Skip` (for a scheduled first attempt only:
        a retry, recovered, manual or replayed attempt has its row or its request). A lost
        election passes none (the winner's row is the record)."""
        self._at(now, mono)
        out: list[Action] = []
        act = self._active.pop(key, None)
        if act is not None:
            if skip is not None and first_scheduled(act.p):
                out.append(Skip(act.p.js.job.id, act.p.planned, act.p.origin, skip))
            self._free_guards(act.p, now, out)
            self._occurrence_done(act.p.js, now, out)
        return self._decision(out)

    def defer(self, key: ExecKey, now: datetime, until: datetime, *,
              keep_group: bool = False, mono: float | None = None) -> Decision:
        """The attempt could not start yet (a cluster-wide guard is held on another node):
        give back its slot and try the same attempt again at ``until``. ``keep_group``: it
        keeps its serial group on this node meanwhile (it waits for that group), so the
        group's newer fires queue behind it; else the group is freed too. ``until`` is
        read as the interval ``until - now``, on the monotonic clock."""
        self._at(now, mono)
        out: list[Action] = []
        act = self._active.pop(key, None)
        if act is not None:
            p = act.p
            if keep_group and p.group is not None:
                if p.waiting_since is None:
                    p.waiting_since = self._mono  # waiting for the group: ``expired``
                self._running -= 1
                self._fill_slots(now, out)
            else:
                self._free_guards(p, now, out)
            self._push(until, _RETRY, p.js.job.id, 0, p)
        return self._decision(out)

    def blocked(self, key: ExecKey, now: datetime, until: datetime, *, overlap: bool,
                mono: float | None = None) -> Decision:
        """A cluster-wide guard of this :class:`Fire` is held on another node: ``overlap``
        when it is the job's own (single_instance) lock, else its serial group's.

        ``overlap``: under overlap ``skip``, a scheduled first attempt is dropped (reason
        overlap), as a local overlap would drop it; anything else (a retry, a recovered
        row, a manual, replayed or misfire catch-up fire) must not be lost: it is deferred
        to ``until`` and frees its serial group meanwhile (it waits for its job).

        Serial group (not ``overlap``): the oldest waiter for the group keeps it on this
        node and is retried at ``until`` (same attempt and occurrence); the group's local
        waiters queue behind it. Blocked longer than ``misfire_threshold`` in all, a
        scheduled first attempt is ``expired``. See "Cluster-wide" in :mod:`.guards`."""
        act = self._active.get(key)
        if act is None:
            return self._decision([])
        p = act.p
        if not overlap:
            return self.defer(key, now, until, keep_group=True, mono=mono)
        # Only a plain cron fire is dropped: a misfire catch-up must wait its turn.
        if (p.origin is Origin.CRON and first_scheduled(p)
                and p.js.job.overlap_policy is not OverlapPolicy.ALLOW):
            out: list[Action] = [self._overlap_skip(p, running=None)]
            out.extend(self.release(key, now, mono=mono).actions)
            return self._decision(out)
        return self.defer(key, now, until, mono=mono)

    def unavailable(self, key: ExecKey, now: datetime, *, mono: float | None = None
                    ) -> Decision:
        """The store could not be reached for this :class:`Fire`: its attempt never
        started. Until :meth:`store_back`, attempts of jobs that write rows are not
        started: a cron (or misfire) first attempt is remembered as missed, so that the
        misfire policy covers it when the store is back; any other attempt (retry,
        recovery, manual, replay) is held and starts then. Jobs without rows fire on."""
        self._at(now, mono)
        out: list[Action] = []
        self._store_down = True
        act = self._active.pop(key, None)
        if act is not None:
            self._running -= 1
            self._hold(act.p, now, out)
            self._fill_slots(now, out)
        return self._decision(out)

    @property
    def store_down(self) -> bool:
        return self._store_down

    def store_back(self, now: datetime, *, mono: float | None = None) -> Decision:
        """The store works again: start the held attempts, then apply each job's misfire
        policy to the set of instants it could not start, from the oldest of them
        (everything before it was confirmed or deliberately skipped; nothing after it was
        decided during the outage): see :meth:`_misfire_set`."""
        self._at(now, mono)
        out: list[Action] = []
        self._store_down = False
        held, self._held = self._held, []
        for p in held:
            self._on_retry(p, now, out)
        for job_id in sorted(j for j, js in self._jobs.items() if js.lost is not None):
            js = self._jobs[job_id]
            assert js.lost is not None
            floor, js.lost = js.lost - _TICK, None
            if js.schedule is None:
                continue
            # In memory only: these instants were taken from the heap but never started,
            # so the (durable, monotonic) cursor never passed them.
            js.handled = floor
            js.gen += 1  # drop the heap entry pushed during the outage
            self._misfire_set(js, floor, now, out)
            self._push_next(js, js.handled)
        return self._decision(out)

    def trigger(
        self,
        job_id: str,
        now: datetime,
        *,
        planned: datetime | None = None,
        origin: Origin = Origin.MANUAL,
        mono: float | None = None,
    ) -> tuple[str, Decision]:
        """Run one occurrence now (manual: planned = ``now``; replay: the given instant).
        Returns its occurrence id. Paused and disabled jobs run too: the operator asked."""
        js = self._jobs.get(job_id)
        if js is None:
            raise NotFoundError(f"no job {job_id!r}")
        self._at(now, mono)
        at = now if planned is None else planned
        occurrence = self._occ(job_id, at)
        p = _Pending(js, at, now, 1, origin, occurrence)
        out: list[Action] = []
        self._offer_explicit(p, now, out)
        return occurrence, self._decision(out)

    def set_paused(self, job_id: str, paused: bool) -> None:
        js = self._jobs.get(job_id)
        if js is not None:
            js.paused = paused

    def reload(self, jobs: Iterable[JobDefinition], now: datetime, *,
               mono: float | None = None) -> Decision:
        """Swap definitions. Running attempts finish; fires already admitted to a slot or
        group queue still run with their old definition; a removed job's queued and
        waiting fires are dropped. A changed job whose schedule is unchanged continues
        right after its newest handled instant (an instant due but not ticked yet is still
        decided, never lost); one with a new schedule continues after now (a reload never
        re-fires or catches up)."""
        self._at(now, mono)
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
                old = js.schedule
                js.job = job
                js.schedule = self._schedule(job)
                js.gen += 1
                if old is not None and js.schedule is old and js.handled is not None:
                    self._push_next(js, js.handled)  # (equal schedules are one object)
                    continue
            if js.schedule is not None:
                self._push_next(js, now if js.handled is None else max(js.handled, now))
        live = {id(js.schedule) for js in self._jobs.values()}
        self._schedules = {k: v for k, v in self._schedules.items() if id(v) in live}
        return self._decision(out)

    # --- heap handlers -----------------------------------------------------------------

    def _on_planned(
        self, job_id: str, gen: int, planned: datetime, due: datetime, now: datetime,
        out: list[Action],
    ) -> None:
        js = self._jobs.get(job_id)
        if js is None or js.gen != gen or js.schedule is None:
            return
        if js.handled is not None and planned <= js.handled:  # never fire it twice
            self._push_next(js, js.handled)
            return
        if js.lost is not None:
            # The store is unreachable and this job already has an instant it could not
            # start: this one belongs to the same misfire set, decided when it is back.
            js.handled = planned
            self._push_next(js, planned)
            return
        if now - due > js.job.misfire_threshold:
            # The scheduler stalled (suspended host, clock jump, a long stop): this instant
            # and every later one up to now are one missed set, as at start-up.
            self._missed_set(js, planned - _TICK, planned, now, out)
            self._push_next(js, js.handled if js.handled is not None else planned)
            return
        js.handled = planned
        if js.late is not None and planned > js.late[1]:
            js.late = None
        self._raise_high(planned, job_id)
        self._push_next(js, planned)
        p = _Pending(js, planned, due, 1, Origin.CRON)  # occurrence id: when it starts
        self._offer_cron(p, now, out)

    def _on_retry(self, p: _Pending, now: datetime, out: list[Action]) -> None:
        if p.js.removed:
            out.append(Skip(p.js.job.id, p.planned, p.origin, SkipReason.REMOVED))
            if p.group is not None:  # a fire deferred for its group kept it
                self._free_group(p, now, out)
                self._fill_slots(now, out)
            p.js.in_flight -= 1
            return
        self._admit(p, now, out)

    def _on_timeout(self, key: ExecKey, now: datetime, out: list[Action]) -> None:
        act = self._active.pop(key, None)
        if act is None:
            return
        out.append(Abandon(key, act.p.js.job.id))
        limit = act.p.js.job.timeout
        assert limit is not None  # only attempts of jobs with a timeout get a deadline
        self._ended(act, ExecutionStatus.ABANDONED, f"timed out after {format_duration(limit)}",
                    now, out)

    # --- misfires and recovery -----------------------------------------------------------

    def _misfire_set(self, js: _Job, after: datetime, now: datetime, out: list[Action]
                     ) -> None:
        """The instants in ``(after, now]`` are one set (:mod:`cronctl.core.misfires`):
        if its oldest is late by at most ``misfire_threshold`` nothing was missed and the
        heap fires them, late (remembered as ``late``: see ``_overlap_skip``); else the
        whole set is missed and the policy decides now."""
        assert js.schedule is not None
        oldest = js.schedule.next_after(after)
        if oldest is None or oldest > now:
            return
        job = js.job
        due = oldest
        if job.jitter:
            due += jitter_offset(self._occ(job.id, oldest), job.jitter)
        if now - due > job.misfire_threshold:
            self._missed_set(js, after, oldest, now, out)
        elif job.overlap_policy is OverlapPolicy.SKIP:
            js.late = (after, now)

    def _missed_set(self, js: _Job, after: datetime, oldest: datetime, now: datetime,
                    out: list[Action]) -> None:
        """The set ``(after, now]`` was missed: report it, and offer the catch-up fires as
        explicit fires (they wait for each other, never dropped as overlap)."""
        assert js.schedule is not None
        got = decide(js.schedule, js.job, after, oldest, now,
                     recorded=self._durable and js.job.tracked, paused=js.paused)
        if got is None:
            return
        js.handled = got.newest
        self._raise_high(got.newest, js.job.id)
        out.extend(got.actions)
        for planned in got.fire:
            self._offer_explicit(_Pending(js, planned, now, 1, Origin.MISFIRE), now, out)

    # --- plumbing --------------------------------------------------------------------------

    def _schedule(self, job: JobDefinition) -> ScheduleLike | None:
        if not job.enabled or job.after:  # a dependent fires when its parents have ended
            return None
        schedule = self._make_schedule(job)
        try:
            return self._schedules.setdefault(schedule, schedule)
        except TypeError:  # an unhashable schedule (a test's fake): not shared
            return schedule

    def _push_next(self, js: _Job, after: datetime) -> None:
        schedule = js.schedule
        assert schedule is not None
        # next_after is pure, so the same (schedule object, instant object) gives the same
        # answer: a burst of 10,000 jobs sharing one schedule computes it once, not 10,000
        # times (~3 us each). Identity, not equality: equal datetimes of different zones
        # or folds are different arguments.
        memo = self._memo
        if memo is not None and memo[0] is schedule and memo[1] is after:
            planned = memo[2]
        else:
            planned = schedule.next_after(after)
            self._memo = (schedule, after, planned)
        if planned is None:
            return
        # (inline when there is nothing to add: a burst of 1,000 pushes per second)
        due = self._due(js, planned) if js.job.jitter or self.away is not None else planned
        self._push(due, _FIRE, js.job.id, js.gen, planned)

    def _raise_high(self, instant: datetime, job_id: str) -> None:
        if self._high is None or instant > self._high[0]:
            self._high = (instant, job_id)

    def _check_skew(self, now: datetime) -> None:
        # A clock that went back a little just waits (heap entries are in its future and
        # cursors never move back); one that went back past the limit must not act.
        if self._high is not None and self._high[0] - now > self._skew:
            raise ClockSkewError(self._high[1], self._high[0], now, self._skew)

