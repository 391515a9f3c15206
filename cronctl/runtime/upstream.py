"""Dependents in ``cronctl run`` (docs/behaviour.md#spread-calendars-and-dependencies): the store
poll that decides each dependent's occurrences once its parents' occurrences have ended.

On the I/O thread, every store poll: for each dependent, the planned instants of its
parents' schedule after its cursor (the instant up to which every occurrence is decided)
and up to now are judged by :func:`cronctl.core.dependencies.upstream_verdict` from the
parents' execution rows and skip records. A decision is claimed through the store
(:meth:`~cronctl.store.base.Triggers.decide_dependent`: the one request of the
dependent's (job, instant), unique cluster-wide), so every node may judge and exactly one
decision stands, however many nodes run and restart: "fire" is a request the trigger
poll hands to one scheduler (origin ``dependency``, the occurrence's own id and
``scheduled_at``), "skip" is a skip record (``upstream``, or ``calendar`` when the
dependent's own calendar excludes the instant). The cursor moves over the decided
prefix only, so an instant still waiting is judged again at the next poll, also after a
restart on any node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from cronctl.core import Skip, SkipReason
from cronctl.core.calendars import exclusion
from cronctl.core.dependencies import (
    ParentFact,
    ParentState,
    Verdict,
    occurrence_outcome,
    upstream_verdict,
)
from cronctl.core.timing import schedule_for
from cronctl.ids import occurrence_id
from cronctl.jobs.model import JobDefinition, Origin
from cronctl.runtime.logsetup import ids
from cronctl.store.base import Store

log = logging.getLogger("cronctl.runtime")

# Planned instants judged per dependent and poll, the waiting ones included (a
# per-second chain that fell far behind catches up over several polls rather than in
# one long one).
WINDOW = 500
_TICK = timedelta(microseconds=1)
STRANDED_EVERY = 10  # polls between looks for requests a dead node took (~5 s)


def parent_fact(store: Store, parent: JobDefinition | None, parent_id: str, t: datetime,
                *, rows_only: bool = False) -> ParentFact:
    """What the store holds of ``parent_id``'s occurrence at ``t``. ``rows_only``: its
    skip records do not count (a chained replay waits for the replayed execution)."""
    rows = store.executions_of_occurrence(parent_id, occurrence_id(parent_id, t))
    if rows:
        return occurrence_outcome(rows, parent.max_attempts if parent is not None else 1)
    if rows_only:
        return ParentFact(ParentState.NONE)
    skips = store.skips_covering(parent_id, t)
    if skips:
        return ParentFact(ParentState.SKIPPED, skips[0].reason)
    return ParentFact(ParentState.NONE)


class Upstream:
    """The dependents' poll of one scheduler. ``jobs`` gives the current definitions."""

    def __init__(self, store: Store, *, node_id: str, clock: Callable[[], datetime],
                 jobs: Callable[[], Sequence[JobDefinition]],
                 ttl: timedelta = timedelta(seconds=15),
                 decided: Callable[[Skip], None] | None = None) -> None:
        self.store = store
        self.decided = decided  # the observers hear of the skips this node decided
        self.ttl = ttl  # a node silent this long is dead (as liveness judges it)
        self._polls = 0
        # per dependent: (schedule, newest instant judged, instants still waiting)
        self._progress: dict[str, tuple[str, datetime, list[datetime]]] = {}
        self.node_id = node_id
        self.clock = clock
        self.jobs = jobs
        self._seen: Sequence[JobDefinition] | None = None
        self._dependents: tuple[JobDefinition, ...] = ()
        self._since: datetime | None = None  # the scheduler's start (see started)
        self._at_start: frozenset[str] = frozenset()

    def started(self, now: datetime) -> None:
        """The scheduler started at ``now``: a dependent it had then and that has no cursor
        yet is judged from ``now``, not from its first poll (which comes later: its
        parents' instants in between would be left unjudged, without a record)."""
        self._since = now
        self._at_start = frozenset(job.id for job in self.dependents())

    def dependents(self) -> tuple[JobDefinition, ...]:
        """The enabled dependents, worked out once per job set: the scheduler asks at every
        poll, and walking 100,000 jobs each time to find none cost its thread ~5 ms."""
        jobs = self.jobs()
        if jobs is not self._seen:
            self._seen = jobs
            self._dependents = tuple(job for job in jobs if job.after and job.enabled)
        return self._dependents

    def any(self) -> bool:
        return bool(self.dependents())

    def poll(self) -> None:
        dependents = self.dependents()
        if not dependents:
            return
        jobs = {job.id: job for job in self.jobs()}
        now = self.clock()
        for job in dependents:
            try:
                self._poll_one(job, jobs, now)
            except Exception as exc:  # the next poll tries again
                log.warning("dependent job=%s: %s", job.id, exc, extra=ids(job.id))
        try:
            self._chains(jobs, [job.id for job in dependents], now)
            self._polls += 1
            if self._polls % STRANDED_EVERY == 0:
                self._stranded([job.id for job in dependents], now)
        except Exception as exc:
            log.warning("chained dependents: %s", exc)

    def _stranded(self, dependents: list[str], now: datetime) -> None:
        """A request a node took and then died before it wrote the execution row would
        never run: give it back (the row, when there is one, is recovery's)."""
        requests = self.store.stranded_dependency_requests(dependents)
        if not requests:
            return
        # A node id comes back when its scheduler restarts: a request taken before the
        # live node registered was taken by the one that stopped.
        live = {node.node_id: node.started_at
                for node in self.store.live_nodes(now, self.ttl)}
        for request in requests:
            t, taker = request.scheduled_at, request.taken_by
            if taker is None or t is None:
                continue
            since = live.get(taker)
            if since is not None and (request.taken_at is None or request.taken_at >= since):
                continue
            rows = self.store.executions_of_occurrence(request.job_id,
                                                       occurrence_id(request.job_id, t))
            if rows:  # it ran (recovery has the rest): only close the request
                self.store.complete_trigger(request.id, execution_id=rows[0].id)
                continue
            if self.store.untake_trigger(request.id, taker):
                log.warning("dependent job=%s planned=%s: node %s took it and stopped "
                            "before it ran; queued again", request.job_id, t.isoformat(),
                            taker, extra=ids(request.job_id))

    def _chains(self, jobs: Mapping[str, JobDefinition], dependents: list[str],
                now: datetime) -> None:
        """``replay``/``trigger --chain`` requests: the dependents' occurrences at the
        instant of a replayed or triggered parent, released to run (or closed) once the
        parents' executions there have ended."""
        for request in self.store.chain_waits(dependents):
            job, t = jobs[request.job_id], request.scheduled_at
            if t is None:
                continue
            facts = {e.job_id: parent_fact(self.store, jobs.get(e.job_id), e.job_id, t,
                                           rows_only=True) for e in job.after}
            got = upstream_verdict(job, t, facts, now, waited_from=request.requested_at)
            if got.verdict is Verdict.WAIT:
                continue
            skip = None if got.verdict is Verdict.FIRE else got.detail
            if self.store.release_chain(request.id, self.node_id, skip=skip, now=now):
                log.info("chained dependent job=%s planned=%s: %s", job.id, t.isoformat(),
                         "released to run" if skip is None else f"not run: {skip}",
                         extra=ids(job.id))

    def _poll_one(self, job: JobDefinition, jobs: Mapping[str, JobDefinition], now: datetime
                  ) -> None:
        state = self.store.get_schedule(job.id)
        cursor = state.cursor if state is not None else None
        if cursor is None:
            # A new dependent starts when a scheduler first had it, as a new job does: no
            # catch-up of what was planned before. That is its first_seen, or this
            # scheduler's start if it had the job then (the definitions are saved in the
            # background: this poll may come first); a job added later, this poll.
            first = state.first_seen if state is not None else None
            if first is None and job.id in self._at_start:
                first = self._since
            cursor = now if first is None else min(first, now)
            self.store.advance_cursor(job.id, cursor)
        paused = state is not None and state.paused
        # The instants still waiting, and the newest one judged: a parent occurrence that
        # runs for hours must not hold back the instants after it (they are judged as
        # they come; the cursor stays before the oldest waiting one). In memory: after a
        # restart, judging starts again at the cursor (claims make a second judgment a
        # no-op).
        kept = self._progress.get(job.id)
        if kept is None or kept[0] != job.schedule_text or kept[1] < cursor:
            kept = (job.schedule_text, cursor, [])
        _, frontier, waiting = kept
        waiting = [t for t in waiting if t > cursor]
        room = WINDOW - len(waiting)
        fresh = schedule_for(job).between(frontier, now, limit=room) if room > 0 else []
        still: list[datetime] = []
        for t in [*waiting, *fresh]:
            skip = self._judge(job, jobs, t, now, paused)
            if skip is None:
                still.append(t)  # judged again at the next poll
            else:
                self._claim(job, t, skip, now)
        newest = fresh[-1] if fresh else frontier
        self._progress[job.id] = (job.schedule_text, newest, still)
        # every instant up to the cursor is decided
        decided = min(still) - _TICK if still else newest
        if decided > cursor:
            self.store.advance_cursor(job.id, decided)

    def _claim(self, job: JobDefinition, t: datetime, skip: tuple[str, str], now: datetime
               ) -> None:
        reason, detail = skip
        claimed = self.store.decide_dependent(
            job.id, t, self.node_id, skip=None if reason == "" else skip, now=now)
        if not claimed:
            return  # another node (or an earlier judgment) decided it
        if reason:
            log.info("skipped job=%s planned=%s reason=%s (%s)", job.id, t.isoformat(),
                     reason, detail, extra=ids(job.id))
            if self.decided is not None:
                self.decided(Skip(job.id, t, Origin.DEPENDENCY, SkipReason(reason),
                                  detail=detail))
        else:
            log.info("dependent ready job=%s planned=%s: %s", job.id, t.isoformat(), detail,
                     extra=ids(job.id))

    def _judge(self, job: JobDefinition, jobs: Mapping[str, JobDefinition], t: datetime,
               now: datetime, paused: bool) -> tuple[str, str] | None:
        """``("", detail)`` to fire, ``(reason, detail)`` to skip, None to wait."""
        facts = {e.job_id: parent_fact(self.store, jobs.get(e.job_id), e.job_id, t)
                 for e in job.after}
        got = upstream_verdict(job, t, facts, now)
        if got.verdict is Verdict.WAIT:
            return None
        if got.verdict is Verdict.SKIP:
            return "upstream", got.detail
        hit = exclusion(job, t)
        if hit is not None:
            return "calendar", hit.detail
        if paused:
            return "paused", "the dependent is paused"
        return "", got.detail


__all__ = ["WINDOW", "Upstream", "parent_fact"]
