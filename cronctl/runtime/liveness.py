"""This node's heartbeat and the judgement of the others, on a thread of their own and on
the monotonic clock (docs/behaviour.md#liveness: "Liveness never trusts a node's wall clock", "No
attempt outlives its scheduler").

Every :data:`CHECK_INTERVAL` the thread asks the store which nodes are dead (one query;
on SQLite a look at ``/proc``: see :mod:`cronctl.store.liveness`), releases their guard
locks, and hands their single_instance executions (and those a stopped node left) to
recovery. The locks of their running attempts are released by recovery, when it closes
those rows (``lost``): until then the job stays held cluster-wide. A command attempt that
left its process group running on this host is ended first (SIGTERM, then SIGKILL after
the job's ``kill_timeout``), on a short-lived thread of its own, and handed over only
once the group is gone: the next attempt never starts beside it. The interrupted row is
closed with the time its group ended: when this node saw it end, or, when it had already
ended (its leader dies with its scheduler), the last moment its node was known alive.

The heartbeat runs every ``heartbeat_interval``, or every ``store.beat_interval`` when
that is shorter (PostgreSQL: a dropped lock session is taken again within it), and never
waits behind other store work: it is what keeps this node alive in the others' eyes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from cronctl import processes
from cronctl.dispatch import escapees
from cronctl.errors import first_line
from cronctl.jobs.model import ExecutionStatus, JobDefinition
from cronctl.runtime.homes import Homes
from cronctl.runtime.logsetup import ids
from cronctl.store.base import ExecutionRecord, NodeRecord, Store, StoreUnavailable
from cronctl.store.urls import database_identity

log = logging.getLogger("cronctl.runtime")

CHECK_INTERVAL = 0.5  # seconds between judgements of the other nodes
HOMES_EVERY = 4  # checks between reads of the live nodes (runtime.homes)
STALE_SWEEP_EVERY = 20  # checks: locks of nodes without a row (none found dead meanwhile)
ORPHAN_SCAN_EVERY = 4  # checks: rows of nodes that stopped and left them to the cluster
REHAND_AFTER = 10.0  # seconds: a running row handed over and still running is retried
GROUP_POLL = 0.05  # seconds between looks at a process group being terminated
GONE_WAIT = 5.0  # seconds to wait for a group to vanish after SIGKILL
DEFAULT_KILL_TIMEOUT = 10.0  # a job no longer defined here: the default kill_timeout

Recover = Callable[[list[ExecutionRecord], dict[int, datetime]], None]


def end_group(pgid: int, ident: str | None, kill_timeout: float) -> bool:
    """End what is left of the recorded process group ``pgid`` on this host: SIGTERM, then
    SIGKILL after ``kill_timeout`` seconds. Blocks until it is gone (or gives up after
    :data:`GONE_WAIT` more seconds); False if there was nothing to end."""
    members = processes.group_members(pgid, ident)
    if not members:
        return False
    deadline = time.monotonic() + kill_timeout
    sig = signal.SIGTERM
    while members:
        _signal(pgid, members, sig)
        now = time.monotonic()
        if sig == signal.SIGKILL and now > deadline + GONE_WAIT:
            log.warning("process group %d survives SIGKILL (members %s); going on", pgid,
                        members)
            return True
        if sig == signal.SIGTERM and now >= deadline:
            sig = signal.SIGKILL
            continue
        time.sleep(GROUP_POLL)
        members = processes.group_members(pgid, ident) or []
    return True


def _signal(pgid: int, members: Sequence[int], sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:  # not ours to signal as a group: each member we may
        for pid in members:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)


def attempt_scope(database_url: str) -> str:
    """The tag scope of the attempts of schedulers on this host using ``database_url``."""
    return escapees.scope_of(database_identity(database_url))


def _end_escaped(r: ExecutionRecord, scope: str) -> None:
    """What an interrupted attempt started outside its process group (``setsid``) and
    that still runs on this host: ended before the next attempt (SIGKILL). ``scope``: the
    tag prefix of this database's attempts (:func:`cronctl.dispatch.escapees.scope_of`)."""
    killed = escapees.end_left_behind(r.occurrence_id, r.attempt, r.id, r.pgid, scope)
    if killed:
        log.warning("ended %d process(es) exec=%s started outside its process group and "
                    "left running when its scheduler died: pid %s", len(killed), r.id,
                    ", ".join(map(str, killed)), extra=ids(r.job_id, r.id))


class Liveness:
    """The heartbeat and node-judgement thread of one scheduler."""

    def __init__(
        self, store: Store, *, node_id: str, ttl: timedelta, beat_every: float,
        clock: Callable[[], datetime], jobs: Callable[[], Mapping[str, JobDefinition]],
        heartbeat: Callable[[], None], recover: Recover,
        unavailable: Callable[[StoreUnavailable], None],
        down: Callable[[], bool], scope: str = "", why: dict[int, str] | None = None,
    ) -> None:
        self.store = store
        self.node_id = node_id
        self.ttl = ttl
        self.beat_every = beat_every
        self.clock = clock
        self._jobs = jobs
        self._heartbeat = heartbeat
        self._recover = recover
        self._unavailable = unavailable
        self._down = down
        self.scope = scope  # of this database's attempt tags (see _end_escaped)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cronctl-liveness",
                                        daemon=True)
        # The heartbeat on a thread of its own: a node check stuck on a frozen path never
        # holds back the beat that tells the supervisor so (docs/liveness.md).
        self._beater = threading.Thread(target=self._beat, name="cronctl-heartbeat",
                                        daemon=True)
        self._handed: dict[int, float] = {}  # execution id -> monotonic time handed over
        self._ending: set[int] = set()  # rows whose process group is being ended
        self._guard = threading.Lock()
        # When each dead node was last seen alive: the check before the one that found it
        # dead (SQLite, where heartbeats are rare and this is the better bound).
        self._last_alive: dict[str, datetime] = {}
        self._was_dead: set[str] = set()
        self._previous: datetime | None = None
        self._checks = 0
        self._failing = False
        # Execution id -> what is known of why its node was taken over (the lost row's
        # error, see lost_reason): filled before the rows are handed over, shared with
        # the scheduler thread that closes them (Firing.lost_why).
        self.why: dict[int, str] = {} if why is None else why
        self.homes = Homes(node_id)  # who tries a single_instance job's instants first

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._beater.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in (self._beater, self._thread):
            if thread.is_alive():
                thread.join(10.0)

    def handed(self, rows: Iterable[ExecutionRecord]) -> None:
        """Rows recovery has already been given (at start-up)."""
        at = time.monotonic()
        with self._guard:
            self._handed.update((r.id, at) for r in rows)

    # --- the thread ------------------------------------------------------------------------

    def _beat(self) -> None:
        next_beat = time.monotonic()
        while not self._stop.is_set():
            next_beat = max(next_beat + self.beat_every, time.monotonic())
            self._guarded("heartbeat", self._heartbeat)
            self._stop.wait(max(next_beat - time.monotonic(), 0.0))

    def _run(self) -> None:
        while not self._stop.is_set():
            next_check = time.monotonic() + CHECK_INTERVAL
            if not self._down():
                self._guarded("node check", self.check)
            self._stop.wait(max(next_check - time.monotonic(), 0.0))

    def _guarded(self, what: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except StoreUnavailable as exc:
            self._unavailable(exc)
        except Exception as exc:
            level = logging.DEBUG if self._failing else logging.WARNING
            self._failing = True
            log.log(level, "%s failed: %s", what, first_line(exc))
        else:
            if self._failing and what == "node check":
                self._failing = False
                log.info("node check works again")

    def check(self) -> None:
        """One judgement of the other nodes (also called by tests)."""
        now = self.clock()
        me = self.node_id
        nodes = self.store.dead_nodes(now, self.ttl)
        dead = {n.node_id: n for n in nodes if n.node_id != me}
        self._checks += 1
        # The same table read again: only when a node died, and now and then for the
        # nodes that joined (a home view a few seconds old only makes nodes contend).
        if dead.keys() != self._was_dead or self._checks % HOMES_EVERY == 1:
            self.homes.live_are(n.node_id for n in self.store.live_nodes(now, self.ttl))
        rows: dict[int, ExecutionRecord] = {}
        if dead:
            for r in self.store.pending_or_running(node_ids=list(dead)):
                if r.scope_node is None:
                    rows[r.id] = r
        full = self._checks % ORPHAN_SCAN_EVERY == 1  # rows a stopped node left: no hurry
        if full:
            for r in self.store.orphaned_executions():
                if r.node_id != me:
                    rows[r.id] = r
        # A write: only when a node has just died (or now and then, for the locks of
        # nodes without a row), not at every check for as long as a dead row stays.
        if dead.keys() - self._was_dead or self._checks % STALE_SWEEP_EVERY == 1:
            # The locks of the attempts that were running stay until recovery closes
            # them (lost: the same transaction releases them): no newer fire takes the
            # job between this release and the recovery, nor runs beside a process group
            # still being ended.
            keep = [r.id for r in rows.values() if r.status is ExecutionStatus.RUNNING]
            freed = self.store.release_stale_locks(now, self.ttl, keep=keep)
            if freed:
                log.info("released %d guard locks of nodes that are gone (%s)", freed,
                         ", ".join(sorted(dead)) or "no node row")
            if dead and (retake := self.store.release_triggers(list(dead))):
                log.info("released %d trigger requests taken by nodes that are gone (%s)",
                         retake, ", ".join(sorted(dead)))
        self._note_deaths(now, dead)
        fresh = self._fresh(rows, full)
        if fresh:
            self.hand_over(fresh, dead, now)

    def _note_deaths(self, now: datetime, dead: Mapping[str, NodeRecord]) -> None:
        """A node found dead now was alive at the previous check (if it was not dead then
        already): its attempts ended in between (their leaders die with it)."""
        if self._previous is not None:
            for node_id in dead.keys() - self._was_dead:
                self._last_alive[node_id] = self._previous
        for node_id in self._last_alive.keys() - dead.keys():
            del self._last_alive[node_id]
        self._was_dead = set(dead)
        self._previous = now

    def _fresh(self, rows: Mapping[int, ExecutionRecord], full: bool) -> list[ExecutionRecord]:
        """Rows not handed over yet (a running row again after :data:`REHAND_AFTER`: its
        close may have failed). After a ``full`` scan, rows handed over that are not
        pending or running any more are forgotten."""
        mono = time.monotonic()
        out: list[ExecutionRecord] = []
        with self._guard:
            for eid in [e for e in self._handed if full and e not in rows]:
                del self._handed[eid]  # ended: forget it
            for eid, r in sorted(rows.items(), key=lambda kv: (kv[1].scheduled_at, kv[0])):
                if eid in self._ending:
                    continue
                at = self._handed.get(eid)
                if at is not None and (r.status is ExecutionStatus.PENDING
                                       or mono - at < REHAND_AFTER):
                    continue
                self._handed[eid] = mono
                out.append(r)
        return out

    # --- handing rows to recovery -------------------------------------------------------------

    def hand_over(self, rows: Sequence[ExecutionRecord], dead: Mapping[str, NodeRecord],
                  now: datetime) -> None:
        """Hand ``rows`` to recovery; those whose process group still runs on this host
        once it has been ended (each on a thread of its own)."""
        ready: list[ExecutionRecord] = []
        ends: dict[int, datetime] = {}
        for r in rows:
            if r.status is ExecutionStatus.RUNNING and r.node_id in dead:
                self.why[r.id] = self.lost_reason(dead[r.node_id], now)
            if r.status is ExecutionStatus.RUNNING:
                _end_escaped(r, self.scope)  # (its process group is ended below, or is gone)
            if r.status is ExecutionStatus.RUNNING and self._owned(r):
                with self._guard:
                    self._ending.add(r.id)
                threading.Thread(target=self._end_then_recover, args=(r,), daemon=True,
                                 name=f"cronctl-end-{r.id}").start()
                continue
            ready.append(r)
            if r.status is ExecutionStatus.RUNNING:
                ends[r.id] = self.ended_at(r, dead.get(r.node_id), now)
        if ready:
            self._recover(ready, ends)

    def lost_reason(self, node: NodeRecord, now: datetime) -> str:
        """The error of an attempt taken over from ``node``: what is known, by the rule that
        judged it dead (docs/liveness.md), never a guess about its outcome."""
        seen = node.heartbeat_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.store.beat_interval is None:  # SQLite: its process is gone
            return (f"lost: node {node.node_id}'s scheduler stopped (last heartbeat {seen}); "
                    "its outcome is unknown")
        if now - node.heartbeat_at >= self.ttl:
            return (f"lost: node {node.node_id} sent no heartbeat since {seen} (more than the "
                    f"{self.ttl.total_seconds():g}s lease: frozen, or its database path "
                    "silent); its outcome is unknown")
        return (f"lost: node {node.node_id} lost the database at {seen} (its session and lock "
                "ended: killed, crashed or cut off); its outcome is unknown")

    def ended_at(self, r: ExecutionRecord, node: NodeRecord | None, now: datetime) -> datetime:
        """When an interrupted attempt whose process is already gone ended: the last
        moment its node was known alive (never before it started, never after ``now``)."""
        if node is None:
            return now
        seen = node.heartbeat_at
        if self.store.beat_interval is None:  # rare heartbeats: the checks know better
            seen = max(seen, self._last_alive.get(node.node_id, seen))
        if r.started_at is not None:
            seen = max(seen, r.started_at)
        return min(seen, now)

    def end_groups(self, rows: Sequence[ExecutionRecord]) -> dict[int, datetime]:
        """At start-up, before any fire: end the process groups ``rows`` left running on
        this host (in line); their end times."""
        ends: dict[int, datetime] = {}
        for r in rows:
            if r.status is ExecutionStatus.RUNNING:
                _end_escaped(r, self.scope)
            if (r.status is ExecutionStatus.RUNNING and self._owned(r)
                    and r.pgid is not None
                    and end_group(r.pgid, r.process_start, self._kill_timeout(r.job_id))):
                self._log_ended(r)
                ends[r.id] = self.clock()
        return ends

    def _owned(self, r: ExecutionRecord) -> bool:
        """Whether the process group ``r`` records still runs on this host and is that
        attempt's own (its leader's start time, this boot, and the attempt's environment
        in ``/proc``). A group the row names but that is not the attempt's is left alone,
        with a WARNING: a row is not an order (docs/trust.md)."""
        if r.pgid is None:
            return False
        members = processes.group_members(r.pgid, r.process_start)
        if not members:
            return False
        foreign = escapees.foreign_group(r.pgid, members, r.occurrence_id, r.attempt, r.id,
                                         self.scope)
        if foreign is None:
            return True
        log.warning("process group %s recorded for interrupted job=%s exec=%s is not "
                    "ended: %s; the row is recovered without touching it", r.pgid,
                    r.job_id, r.id, foreign, extra=ids(r.job_id, r.id))
        return False

    def _end_then_recover(self, r: ExecutionRecord) -> None:
        try:
            assert r.pgid is not None
            end_group(r.pgid, r.process_start, self._kill_timeout(r.job_id))
            self._log_ended(r)
            self._recover([r], {r.id: self.clock()})
        except Exception:
            log.exception("could not end the process group of exec=%s", r.id)
        finally:
            with self._guard:
                self._ending.discard(r.id)

    def _kill_timeout(self, job_id: str) -> float:
        job = self._jobs().get(job_id)
        return DEFAULT_KILL_TIMEOUT if job is None else job.kill_timeout.total_seconds()

    @staticmethod
    def _log_ended(r: ExecutionRecord) -> None:
        log.warning("ended process group %s of interrupted job=%s exec=%s before its next "
                    "attempt", r.pgid, r.job_id, r.id, extra=ids(r.job_id, r.id))


__all__ = ["CHECK_INTERVAL", "Liveness", "end_group"]
