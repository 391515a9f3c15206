"""The runtime's I/O thread: store writes that must not delay a fire (final statuses, log
drains, cursor batches) and periodic store work (log flush, heartbeat, polls).

One thread, a FIFO of tasks and a few periodic jobs: what it writes for one execution
stays in order, and the scheduler thread never waits for it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cronctl.errors import first_line
from cronctl.store.base import StoreUnavailable

log = logging.getLogger("cronctl.runtime")

Task = Callable[[], object]
# Items per slice of in_background (a transaction each: job definitions at start and at
# reload, a few ms of SQLite's write lock each).
SLICE = 500


@dataclass(slots=True)
class _Periodic:
    name: str
    interval: float
    due: float
    fn: Task


class IoWorker:
    def __init__(self, name: str = "cronctl-io") -> None:
        self._tasks: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._periodic: list[_Periodic] = []
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._failing: set[str] = set()
        self._timers: list[tuple[float, int, Task]] = []  # one-shot: (due, seq, task)
        self._seq = itertools.count()
        # Where a StoreUnavailable goes instead of a per-task warning (see runtime.health).
        self.on_unavailable: Callable[[StoreUnavailable], None] | None = None
        self._turns: dict[str, object] = {}  # name -> the in_background run that is current
        self._background: IoWorker | None = None

    def submit(self, task: Task) -> None:
        self._tasks.put(task)

    def in_background(self, name: str, items: Sequence[Any],
                      fn: Callable[[Sequence[Any]], object], size: int = SLICE) -> None:
        """Run ``fn`` on ``items`` a slice of ``size`` at a time (a transaction each), on a
        second thread made for such work, so that this thread's writes (final statuses,
        which free a single_instance job's next instant) never wait for it: saving
        100,000 definitions took ~6 s alone, over a minute on three loaded nodes. A later
        call with the same ``name`` supersedes this one (its slices not run yet are
        dropped). A slice that fails ends the run. :meth:`stop` waits for it."""
        token = self._turns[name] = object()

        def run() -> None:
            for start in range(0, len(items), size):
                if self._turns.get(name) is not token:
                    return
                fn(items[start:start + size])
            if self._turns.get(name) is token:
                del self._turns[name]
        if self._background is None:
            # (Its failures are its own: a slow background write is no outage of the
            # fire path, which finds out for itself when the store is down.)
            self._background = IoWorker(name=f"{self._thread.name}-background")
            if self.started:
                self._background.start()
        self._background.submit(run)

    def every(self, name: str, interval: float, fn: Task, *, first: float | None = None) -> None:
        """Run ``fn`` every ``interval`` seconds (first after ``first``, default interval).
        Must be called before :meth:`start`."""
        start = time.monotonic() + (interval if first is None else first)
        self._periodic.append(_Periodic(name, max(interval, 0.01), start, fn))

    def after(self, delay: float, task: Task) -> None:
        """Run ``task`` once, ``delay`` seconds from now (any thread)."""
        due = time.monotonic() + delay
        # Registered by the I/O thread itself, which then recomputes how long to sleep.
        self._tasks.put(lambda: heapq.heappush(self._timers, (due, next(self._seq), task)))

    def start(self) -> None:
        self._thread.start()
        if self._background is not None:
            self._background.start()

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def stop(self, timeout: float | None = None) -> bool:
        """Run what is queued, then end the thread; False if it is still busy after
        ``timeout`` seconds (it is a daemon thread: it does not keep the process alive)."""
        began = time.monotonic()
        if self._background is not None and self._background.started:
            self._background.stop(timeout)
        self._tasks.put(None)
        if self._thread.is_alive():
            self._thread.join(None if timeout is None
                              else max(timeout - (time.monotonic() - began), 0.0))
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            now = time.monotonic()
            for p in self._periodic:
                if p.due <= now:
                    self._guard(p.name, p.fn)
                    p.due = max(p.due + p.interval, time.monotonic())
            timers = self._timers
            while timers and timers[0][0] <= now:
                self._guard("task", heapq.heappop(timers)[2])
            wait = min((p.due for p in self._periodic), default=now + 1.0)
            if timers:
                wait = min(wait, timers[0][0])
            wait -= time.monotonic()
            try:
                task = self._tasks.get(timeout=max(wait, 0.0))
            except queue.Empty:
                continue
            if task is None:
                return
            self._guard("task", task)

    def _guard(self, name: str, fn: Task) -> None:
        # Nothing thrown here may end the thread: log the first failure of a kind at
        # WARNING, repeats at DEBUG, and note when it works again.
        try:
            fn()
        except Exception as exc:
            if isinstance(exc, StoreUnavailable) and self.on_unavailable is not None:
                self.on_unavailable(exc)  # one WARNING per outage, not one per task
                return
            level = logging.DEBUG if name in self._failing else logging.WARNING
            self._failing.add(name)
            log.log(level, "%s failed: %s", name, first_line(exc))
        else:
            if name in self._failing and name != "task":
                self._failing.discard(name)
                log.info("%s works again", name)
