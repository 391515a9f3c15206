"""The runtime's side of the relay (:mod:`cronctl.dispatch.relay`): which fires waiting
for a slot are staged, and binding the core's later decision to an attempt a worker
already started.

The relay mirrors the core's slot queue: it is open only while every attempt in that
queue is staged, in the same order (``core.slot_waiting`` equals what is staged and not
yet admitted). A tracked attempt is staged with its place in the queue and becomes
takeable once its ``pending`` row is written (:mod:`cronctl.runtime.fire.waiters`): no handler
starts before its row is committed. An attempt that cannot be staged (a single_instance
or serial group job's: their guard locks are taken with the row at the start; a retry
or a recovered attempt; a command; an ``async def`` handler; a job whose
``misfire_threshold`` is shorter than :data:`MIN_THRESHOLD`) closes it: what is staged
and not started is taken back and starts the ordinary way. It opens again once the
core's queue is empty.

When the core admits a staged attempt (its :class:`Fire` comes), the runtime either
adopts the running attempt (a worker started it: record it as started then), or takes it
back from the relay and dispatches it itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from cronctl.core import Enqueue, Fire, SchedulerCore, WaitReason
from cronctl.core import needs_store as is_tracked
from cronctl.dispatch.base import DispatchRequest, LogSink
from cronctl.dispatch.relay import Relay, Staged
from cronctl.jobs.model import JobDefinition
from cronctl.runtime.fire.records import locks_for
from cronctl.runtime.fire.waiters import IN_FLIGHT, WaiterRows
from cronctl.runtime.inbox import Done, Message, Post

log = logging.getLogger("cronctl.runtime")
# A staged attempt is not taken by a worker later than this before the core could expire
# it for waiting longer than its misfire_threshold (the core hears of the start later).
MARGIN = timedelta(seconds=2)
MIN_THRESHOLD = timedelta(seconds=5)
CHUNK = 64  # staged fires handed to the workers at a time
YIELD = 0.05  # longest the completions wait while workers start staged fires


def _posted(post: Post, staged: Staged, outcome: Any) -> None:
    post(Done(staged, outcome))


class RelayedFires:
    """The relay's bookkeeping on the scheduler thread. It reads the fire path through
    what it is given here, and never starts, records or finishes an attempt itself: an
    attempt a worker started is handed back by :meth:`adopt_started` for the fire path to
    record."""

    def __init__(
        self, dispatcher: object, *, core: SchedulerCore, waiters: WaiterRows,
        persistent: bool, post: Post, mono: Callable[[], float],
        clock: Callable[[], datetime], sink_of: Callable[[JobDefinition], LogSink],
        sink_for: Callable[[int], LogSink], stopping: Callable[[], bool],
        store_down: Callable[[], bool],
        owner: Callable[[int], Callable[[], bool] | None] = lambda _eid: None,
    ) -> None:
        self._core = core
        self._owner = owner  # JobContext.still_owner of a tracked relayed attempt
        self._waiters = waiters
        self._persistent = persistent
        self._post = post
        self._mono = mono
        self._sink_of = sink_of
        self._sink_for = sink_for
        self._stopping = stopping
        self._store_down = store_down
        relay = getattr(dispatcher, "relay", None)
        self._stage: Callable[..., bool] | None = getattr(dispatcher, "stage", None)
        self.relay: Relay | None = relay if isinstance(relay, Relay) else None
        if self.relay is None:
            self._stage = None
        else:  # (the runtime's clocks: tests inject theirs)
            self.relay.mono, self.relay.wall = mono, clock
        self.enabled = self._stage is not None
        self.open = self.enabled
        self.pending: dict[str, Staged] = {}  # staged, not admitted by the core yet
        self._deferred: set[int] = set()  # messages put back once (see settled_for)
        self.not_before: datetime | None = None  # set while a decision made ahead runs
        # Waiting in this wake, not staged yet: (staged, its Enqueue, its job).
        self._candidates: list[tuple[Staged, Enqueue, JobDefinition]] = []
        # Tracked fires staged in order, their context built once their row is written.
        self._unready: dict[str, tuple[Staged, Enqueue, JobDefinition]] = {}

    # --- staging (scheduler thread) --------------------------------------------------------

    def want(self, a: Enqueue, job: JobDefinition | None) -> None:
        """``a`` waits for a slot (and is in the core's slot queue): staged after this
        wake's fires started (:meth:`settle`)."""
        if not self.open:
            return
        if a.reason is not WaitReason.SLOT:
            return  # (not in the slot queue yet: a serial group's waiter joins it later,
            # which settle() notices)
        occurrence = a.occurrence_id
        if (occurrence is None or job is None or not self._stageable(job)
                or occurrence in self.pending):
            self.close()
            return
        staged = Staged(occurrence, self._mono()
                        + (job.misfire_threshold - MARGIN).total_seconds(), self.not_before)
        staged.ready = not is_tracked(job)  # (a tracked one: once its row is written)
        self.pending[occurrence] = staged
        self._candidates.append((staged, a, job))

    def _push(self, most: int) -> None:
        """Stage (up to ``most`` of) this wake's candidates, handing them to the workers in
        chunks (the first fires run while the rest are built)."""
        stage, relay = self._stage, self.relay
        assert stage is not None and relay is not None
        candidates = self._candidates[:most]
        del self._candidates[:most]
        post, chunk = self._post, list[Staged]()
        for staged, a, job in candidates:
            if not staged.ready:  # its place in the queue now, its context with its row
                self._unready[staged.occurrence_id] = (staged, a, job)
            elif not stage(DispatchRequest(job, staged.occurrence_id, a.planned, 1, a.origin),
                           self._sink_of(job), partial(_posted, post, staged), staged):
                relay.push(chunk)
                self.close()  # (this one and those behind it start the ordinary way)
                return
            chunk.append(staged)
            if len(chunk) >= CHUNK:
                relay.push(chunk)
                chunk = []
        relay.push(chunk)

    def landed(self) -> None:
        """Waiters' rows were written: stage the tracked fires they belong to (the row is
        committed before the handler can start; it becomes ``running`` with the next
        final statuses, as for any waiter: see waiters.py)."""
        if not self._unready:
            return
        stage = self._stage
        assert stage is not None
        if self._store_down():
            self.close()
            return
        for occurrence, (staged, a, job) in list(self._unready.items()):
            if staged.revoked:
                del self._unready[occurrence]
                continue
            row = self._waiters.row(a.job_id, occurrence)
            if row == IN_FLIGHT:
                continue
            del self._unready[occurrence]
            request = DispatchRequest(job, occurrence, a.planned, 1, a.origin, row,
                                      still_owner=None if row is None else self._owner(row))
            if row is None or not stage(request, self._sink_for(row),
                                        partial(_posted, self._post, staged), staged):
                self.close()  # (it and those behind it start the ordinary way)
                return
            staged.ready = True

    def _stageable(self, job: JobDefinition) -> bool:
        if job.serial_group is not None or job.misfire_threshold < MIN_THRESHOLD:
            return False
        if not is_tracked(job):
            return True
        # a tracked waiter: if its row is written ahead (waiters.py)
        return self._persistent and self._waiters.enabled and not locks_for(job)

    def settle(self, *admitted: Iterable[Fire], first: bool = False) -> None:
        """Before the wake's fires start (``first``: a first chunk, for the workers those
        fires free) and after (the rest): stage what this wake queued if the relay still
        mirrors the core's queue (``admitted``: fires the core admitted, not bound yet)."""
        if not self.enabled:
            return
        if self._stopping():  # nothing starts any more (docs/behaviour.md#running)
            if self.open or self._candidates:
                self.close()
            return
        pending = self.pending
        soon = sum(1 for fires in admitted for a in fires
                   if a.occurrence_id in pending) if pending else 0
        waiting = self._core.slot_waiting
        if self.open and waiting == len(pending) - soon:
            if self._candidates:
                self._push(CHUNK if first else len(self._candidates))
            return
        if self.open:
            self.close()
        elif waiting == 0 and not soon and not self._candidates:
            if pending:  # started, and the core dropped them (they ran all the same)
                log.debug("relay: %d started attempts the core never admitted", len(pending))
                pending.clear()
            self.open = True

    def close(self) -> None:
        """Take back what no worker started; stage nothing until the core's queue is
        empty."""
        self.open = False
        self._candidates = []
        self._unready.clear()
        if self.relay is not None:
            self.relay.revoke()
        if self.pending:  # what is left: started, waiting for the core to admit them
            self.pending = {k: s for k, s in self.pending.items() if s.started is not None}

    def settled_for(self, msg: Message, put: Post) -> bool:
        """Before a reload changes the core's slot queue: staged fires are taken back. While
        fires a worker started wait for the core to admit them (the completions that let
        them start are still in the inbox), ``msg`` goes back to the inbox, once."""
        self.close()
        if id(msg) in self._deferred:
            self._deferred.discard(id(msg))
            return True
        if not any(s.started is not None for s in self.pending.values()):
            return True
        self._deferred.add(id(msg))
        put(msg)
        return False

    def give_way(self, wait: float) -> float:
        """The scheduler thread would wait ``wait`` s for its inbox: while workers are
        running attempts and fires are staged for them to take next, first wait (up to
        :data:`YIELD`) for them to take every one: the completions they posted can wait,
        the GIL is theirs. Returns what is left of ``wait``."""
        relay = self.relay
        if wait <= 0 or relay is None or relay.running <= 0 or not relay.takeable:
            return wait
        relay.drained.wait(min(wait, YIELD))
        return 0.0

    # --- the core's decisions (scheduler thread) -------------------------------------------

    def admitted(self, a: Fire) -> Staged | None:
        """The core admitted ``a``: its staged attempt if a worker started it (adopt it);
        None to dispatch it the ordinary way (taken back from the relay if staged)."""
        s = self.pending.pop(a.occurrence_id, None)
        if s is None:
            return None
        if s.started is not None:
            return s
        assert self.relay is not None
        return None if self.relay.claim(s) else s

    def adopt_started(self, fires: list[Fire]) -> tuple[list[Fire], list[tuple[Fire, Staged]]]:
        """Of the fires the core admitted: (those to dispatch, those a worker started with
        their staged attempts, to be recorded as running since then)."""
        rest: list[Fire] = []
        started: list[tuple[Fire, Staged]] = []
        for a in fires:
            staged = self.admitted(a)
            if staged is None:
                rest.append(a)
            else:
                started.append((a, staged))
        return rest, started

    def outcome(self, s: Staged, outcome: Any) -> Any:
        """A relayed attempt ended: the core's key, or None (kept until it is admitted,
        or dropped: the core never admitted it)."""
        if s.key is not None:
            return s.key
        if self.pending.get(s.occurrence_id) is s:
            s.outcome = outcome
        return None
