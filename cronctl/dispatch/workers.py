"""Small, fast building blocks for the Python dispatcher.

:class:`WorkerPool` is a bounded thread pool without futures: a fire needs "run this
callable on some worker", and :class:`concurrent.futures.ThreadPoolExecutor` spends most
of its per-task time on the Future it returns (a Condition per task) and on its thread
accounting. Here a task is one ``SimpleQueue.put``; workers are started lazily, up to
``max_workers``, only when no worker is idle.

:class:`CancelFlag` is a :class:`threading.Event` whose construction costs a lock
instead of a Condition (one is made per execution); ``wait`` still works.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("cronctl.dispatch")

Task = tuple[Callable[..., Any], tuple[Any, ...]]


class WorkerPool:
    """At most ``max_workers`` threads running submitted callables in FIFO order."""

    def __init__(self, max_workers: int, name: str = "cronctl-job") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        self.max_workers = max_workers
        self._name = name
        self._queue: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a task
        self._waiting = 0  # tasks submitted and not taken by a thread yet
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._closed:
            raise RuntimeError("the worker pool is shut down")
        # A thread is started when more tasks wait than threads are idle. (Testing only
        # "no thread idle" missed the tasks queued while a thread was idle but had not
        # taken the first of them yet: a burst then ran on fewer threads than allowed.)
        with self._lock:
            self._waiting += 1
            if self._waiting > self._idle and len(self._threads) < self.max_workers:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._name}-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        self._queue.put((fn, args))

    def _work(self) -> None:
        get = self._queue.get
        lock = self._lock
        while True:
            with lock:
                self._idle += 1
            task = get()
            with lock:
                self._idle -= 1
                if task is not None:
                    self._waiting -= 1
            if task is None:
                self._queue.put(None)  # wake the next worker too
                return
            fn, args = task
            try:
                fn(*args)
            except BaseException:  # the task wrappers catch everything; this is a bug
                log.exception("worker task raised")
            del task, fn, args

    @property
    def threads(self) -> int:
        return len(self._threads)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> list[Task]:
        """Stop: ``wait=True`` runs what is queued first; ``wait=False`` returns the queued
        tasks it dropped (the caller owes them an outcome) and does not wait for running
        ones."""
        self._closed = True
        dropped: list[Task] = []
        if not wait:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    dropped.append(item)
        self._queue.put(None)
        if wait:
            for thread in list(self._threads):
                if thread is not threading.current_thread():
                    thread.join(timeout)
        return dropped


class CancelFlag(threading.Event):
    """A :class:`threading.Event` that builds its Condition only when someone waits."""

    def __init__(self) -> None:  # no super().__init__(): that builds the Condition
        self._flag = False
        self._guard = threading.Lock()
        self._waiters: threading.Condition | None = None

    def is_set(self) -> bool:
        return self._flag

    isSet = is_set  # noqa: N815 - threading.Event's old alias

    def set(self) -> None:
        with self._guard:
            self._flag = True
            cond = self._waiters
        if cond is not None:
            with cond:
                cond.notify_all()

    def clear(self) -> None:
        with self._guard:
            self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        with self._guard:
            if self._flag:
                return True
            if self._waiters is None:
                self._waiters = threading.Condition(threading.Lock())
            cond = self._waiters
        with cond:
            if self._flag:
                return True
            cond.wait(timeout)
            return self._flag
