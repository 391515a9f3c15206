"""The relay: fires waiting for a slot, started by the worker whose handler just ended.

With ``max_concurrent_jobs`` slots and a burst larger than that, each waiting fire used
to start only after the scheduler thread had taken in the completion that freed its slot
and decided what starts next: a round trip through the scheduler per fire, so the last
fire of a 1,000-job second started after 1,000 of those. The runtime now stages the
fires it queues for a slot (in the core's FIFO order, resolved and with their context
built) here; a worker that finishes an attempt posts its outcome, then takes the oldest
staged fire and runs it in the same thread. The core still decides: it hears the
completion afterwards, admits the head of its queue (which is the fire already running)
and the runtime binds that decision to the running attempt (see
:mod:`cronctl.runtime.fire.relaying`). A fire is only ever taken after the outcome that freed
its slot was posted, so no more attempts run than the core has admitted or is about to.

:meth:`Relay.revoke` takes every fire that has not started back (the runtime calls it
before anything that changes the core's queue other than admitting its head: a reload, a
stop, a queue that no longer matches); they then start the ordinary way.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any


class Staged:
    """One staged fire: what a worker needs to run it, and what the runtime learns."""

    __slots__ = ("occurrence_id", "run", "handle", "deadline", "not_before", "started", "key",
                 "outcome", "revoked", "ready")

    def __init__(self, occurrence_id: str, deadline: float,
                 not_before: datetime | None = None) -> None:
        self.occurrence_id = occurrence_id
        self.not_before = not_before  # decided ahead of its instant: not taken before it
        self.run: tuple[Any, ...] = ()  # what the dispatcher runs it with (its stage())
        self.handle: Any = None  # the attempt's ExecutionHandle
        self.deadline = deadline  # monotonic: not taken after this (the core may expire it)
        self.started: datetime | None = None  # when a worker took it (Relay.wall)
        self.key: Any = None  # the core's key, once the runtime bound the fire to it
        self.outcome: Any = None  # an outcome that came before the binding
        self.revoked = False
        self.ready = True  # False until ``run`` is set (a tracked fire: once its row is)


class Relay:
    """The FIFO of staged fires, shared by the scheduler thread and the workers."""

    def __init__(self) -> None:
        # The runtime's clocks: ``Staged.deadline`` is on ``mono``, ``started`` on ``wall``.
        self.mono: Callable[[], float] = time.monotonic
        self.wall: Callable[[], datetime] = partial(datetime.now, UTC)
        self._lock = threading.Lock()
        self._queue: deque[Staged] = deque()
        self.drained = threading.Event()  # set while nothing is staged
        self.drained.set()
        # Workers running an attempt, or submitted to run one: each takes a staged fire
        # when its attempt ends.
        self.running = 0

    def enter(self) -> None:
        with self._lock:
            self.running += 1

    def leave(self) -> None:
        with self._lock:
            self.running -= 1

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def takeable(self) -> bool:
        """Something is staged and its head is ready (instants aside)."""
        queue = self._queue
        return bool(queue) and queue[0].ready

    def push(self, staged: list[Staged]) -> None:
        if not staged:
            return
        with self._lock:
            self._queue.extend(staged)
            self.drained.clear()

    def take(self) -> Staged | None:
        """On a worker whose attempt just posted its outcome: the next fire to run here,
        marked started; None when nothing is staged (or the head is too old to take)."""
        if not self._queue:
            return None
        now, wall = self.mono(), self.wall()
        with self._lock:
            queue = self._queue
            if not queue:
                return None
            head = queue[0]
            if not head.ready or (head.not_before is not None and wall < head.not_before):
                return None  # (the core starts it at its instant, or this worker's next)
            if now >= head.deadline:  # the core decides it: stop relaying
                for s in queue:
                    s.revoked = True
                queue.clear()
                self.drained.set()
                return None
            queue.popleft()
            head.started = wall
            if not queue:
                self.drained.set()
            return head

    def claim(self, staged: Staged) -> bool:
        """The runtime dispatches ``staged`` itself: True unless a worker started it."""
        with self._lock:
            if staged.started is not None:
                return False
            queue = self._queue
            if queue and queue[0] is staged:
                queue.popleft()
            elif not staged.revoked:
                with contextlib.suppress(ValueError):
                    queue.remove(staged)
            staged.revoked = True
            if not queue:
                self.drained.set()
        return True

    def revoke(self) -> list[Staged]:
        """Take back every staged fire no worker has started."""
        with self._lock:
            taken = list(self._queue)
            self._queue.clear()
            for s in taken:
                s.revoked = True
            self.drained.set()
        return taken
