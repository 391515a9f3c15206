"""What the scheduler asks of the store on a timer, off its own thread: the node's row and
heartbeat, cancel and trigger requests, paused jobs, and the probe that ends an outage.

Each poll runs on the I/O thread (the heartbeat on the liveness thread) and hands what it
found to the scheduler thread as an inbox message (:mod:`cronctl.runtime.inbox`).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from cronctl import processes, wake
from cronctl.errors import StoreError
from cronctl.runtime.health import DatabaseHealth
from cronctl.runtime.inbox import Cancel, Paused, Post, Trigger
from cronctl.store.base import Store, StoreUnavailable

log = logging.getLogger("cronctl.runtime")


class StorePolls:
    """The node's registration and the store polls of one scheduler."""

    def __init__(self, store: Store, *, node_id: str, ttl: timedelta,
                 clock: Callable[[], datetime], post: Post, health: DatabaseHealth,
                 flush: Callable[[], None], halt: Callable[[str], None]) -> None:
        self.store = store
        self.halt = halt  # this node must stop acting (its database is not the one it had)
        self.node_id = node_id
        self.ttl = ttl
        self.clock = clock
        self.post = post
        self.health = health
        self._flush = flush  # cursors and final statuses that waited for the store
        self.host = socket.gethostname()
        self.identity = processes.identity(os.getpid())
        self.known: frozenset[str] = frozenset()  # the job ids this node schedules
        self.paused_seen: set[str] | None = None  # as the core last heard (None: tell all)
        self.wake: TriggerWake | None = None

    def listen(self, take: Callable[[], None]) -> None:
        """Besides the timed poll, call ``take`` when a ``cronctl trigger`` on this host
        says it queued a request (:mod:`cronctl.wake`). Until :meth:`close`."""
        if self.store.persistent and self.wake is None:
            self.wake = TriggerWake.start(os.getpid(), take)

    def close(self) -> None:
        if self.wake is not None:
            self.wake.stop()
            self.wake = None

    def jobs_are(self, job_ids: Iterable[str], paused: set[str] | None = None) -> None:
        """The job set changed (start-up: ``paused`` as the core got it; a reload: None,
        so the next pause poll reports every job: one that came back may have been paused
        meanwhile)."""
        self.known = frozenset(job_ids)
        self.paused_seen = paused

    def register(self, now: datetime) -> None:
        self.store.register_node(self.node_id, self.host, os.getpid(), now, ttl=self.ttl,
                                 process_start=self.identity)

    def warn_if_not_alone(self, now: datetime) -> None:
        """SQLite is one host: a second live scheduler with another node_id on the same
        file runs every every_instance job twice per instant (and shares nothing a cluster
        needs). Said once, at start, by the one that comes second."""
        if self.store.kind != "sqlite":
            return
        others = [n.node_id for n in self.store.live_nodes(now, self.ttl)
                  if n.node_id != self.node_id and n.node_id != f"{n.host}-here-{n.pid}"]
        if others:
            log.warning("another scheduler is live on this SQLite file (node %s): each "
                        "every_instance job now runs once per node per instant. SQLite is one "
                        "host: run one scheduler per file (same node_id), or use PostgreSQL "
                        "for several nodes", ", ".join(sorted(others)))

    def heartbeat(self) -> None:
        """On the liveness thread; a row that is gone (or taken over after this node was
        judged dead) is registered again."""
        gone = self.store.file_replaced()
        if gone is not None:
            self.halt(f"{gone}: its state now lives on only in this process, and a node "
                      "started now would create a new database beside it")
            return
        now = self.clock()
        if not self.store.heartbeat(self.node_id, now, host=self.host, pid=os.getpid()):
            log.warning("node %s was no longer registered (judged dead?); registering again",
                        self.node_id)
            self.register(now)

    def probe(self) -> None:
        """Is the store back? Write what waited for it: the heartbeat, cursors of fires
        confirmed before the outage, final statuses of executions that ended during it."""
        self.check_schema()  # another cronctl may have upgraded it during the outage
        now = self.clock()
        if not self.store.heartbeat(self.node_id, now, host=self.host, pid=os.getpid()):
            self.register(now)
        self._flush()

    def check_schema(self) -> bool:
        """False (and the node halted) when the database moved to another schema revision:
        this cronctl must not write rows a newer one reads otherwise. A store that cannot
        be reached raises :class:`StoreUnavailable` (the outage's probe retries)."""
        try:
            self.store.check_schema()
        except StoreUnavailable:
            raise
        except StoreError as exc:
            self.halt(str(exc))
            return False
        return True

    def while_up(self, fn: Callable[[], object]) -> Callable[[], None]:
        """``fn``, skipped while the store is unreachable (the probe alone tries it)."""
        def run() -> None:
            if not self.health.down:
                fn()
        return run

    def requests(self, live: list[int], *, stopping: bool) -> None:
        """Cancel requests for the executions running here, then trigger requests."""
        if self.health.down:
            return
        if live:
            cancelled = self.store.cancel_requested(live)
            if cancelled:
                self.post(Cancel(cancelled))
        if stopping:
            return
        for req in self.store.take_triggers(self.node_id, job_ids=self.known, now=self.clock()):
            # planned at the request's own instant, so that if this node dies the node
            # that takes the request again finds the row this one wrote (release_triggers)
            planned = req.scheduled_at if req.scheduled_at is not None else req.requested_at
            self.post(Trigger(req.job_id, req.origin, planned, req.id, None))

    def paused(self) -> None:
        """Tell the core which jobs were paused or resumed since the last poll."""
        known = self.known
        paused = self.store.paused_job_ids() & known
        seen = self.paused_seen
        if seen is None:
            changes = {job_id: job_id in paused for job_id in known}
        else:
            changes = {job_id: job_id in paused for job_id in paused ^ seen}
        self.paused_seen = paused
        if changes:
            self.post(Paused(changes))


class TriggerWake:
    """A thread blocked on this process's wake socket (:mod:`cronctl.wake`): no CPU while
    nobody triggers; each wake calls ``take``, at most once per :data:`wake.MIN_GAP`."""

    def __init__(self, sock: socket.socket, take: Callable[[], None]) -> None:
        self._sock = sock
        self._take = take
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="cronctl-wake", daemon=True)

    @classmethod
    def start(cls, pid: int, take: Callable[[], None]) -> TriggerWake | None:
        sock = wake.listen(pid)
        if sock is None:
            log.debug("no trigger wake socket here: trigger requests wait for the poll")
            return None
        self = cls(sock, take)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopped:
            try:
                self._sock.recv(16)
            except OSError:
                return
            if self._stopped:
                return
            self._take()
            time.sleep(wake.MIN_GAP)  # wakes that came meanwhile: one look covers them
            self._drain()  # (stop's own may be among them: the loop looks at the flag)

    def _drain(self) -> None:
        self._sock.setblocking(False)
        try:
            while True:
                self._sock.recv(16)
        except OSError:
            pass
        finally:
            self._sock.setblocking(True)

    def stop(self) -> None:
        """End the thread (it is told through its own socket) and close the socket."""
        self._stopped = True
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as poke:
                poke.sendto(b"s", self._sock.getsockname())
        except OSError:
            pass
        self._thread.join(1.0)
        self._sock.close()
