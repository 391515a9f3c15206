"""Scheduler nodes: registration, heartbeats and liveness (the rules are in
:mod:`cronctl.store.liveness`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cronctl.store.connection import SqlConnection
from cronctl.store.liveness import (
    BEAT_INTERVAL,
    PG_RELEASE_STALE,
    PG_RELEASE_STALE_WAITERS,
    NodeLock,
    dead_here,
    lock_engine,
    pg_params,
)
from cronctl.store.reads import ReadQueries
from cronctl.store.records import NodeIdInUse, NodeRecord, require_aware
from cronctl.store.tables import group_waiters, guard_locks, scheduler_nodes

N = scheduler_nodes.c


def node_id_in_use_message(old: NodeRecord | None, node_id: str) -> str:
    holder = "" if old is None else (
        f" (host {old.host}, pid {old.pid}, last heartbeat {old.heartbeat_at.isoformat()})")
    return (f"node id {node_id!r} is in use by a live scheduler{holder}: stop it, or give "
            "this scheduler another node_id")


def _judged(conn: Connection, pg: bool, now: datetime, ttl: timedelta
            ) -> list[tuple[NodeRecord, bool]]:
    """Every node row with whether it is dead, by node id."""
    cur = conn.connection.cursor()
    try:
        return ReadQueries(pg).judged_nodes(cur, now, ttl)
    finally:
        cur.close()


def release_stale(conn: Connection, pg: bool, now: datetime, ttl: timedelta, *,
                  keep: Sequence[int] = ()) -> int:
    """Drop the guard locks (and group waiters) of nodes that are dead or have no node
    row, but not the locks of the executions in ``keep``, in the caller's write
    transaction (SQLite: its write lock keeps a dead node from registering again between
    the judgement and the delete; PostgreSQL: one statement)."""
    if pg:
        conn.execute(PG_RELEASE_STALE_WAITERS, pg_params(ttl))
        return int(conn.execute(PG_RELEASE_STALE, {**pg_params(ttl),
                                                   "keep": list(keep)}).rowcount)
    live = [n.node_id for n, dead in _judged(conn, pg, now, ttl) if not dead]
    conn.execute(sa.delete(group_waiters).where(group_waiters.c.node_id.not_in(live)))
    locks = sa.delete(guard_locks).where(guard_locks.c.node_id.not_in(live))
    if keep:
        locks = locks.where(guard_locks.c.execution_id.not_in(keep))
    return int(conn.execute(locks).rowcount)


class Nodes(SqlConnection):
    """Nodes of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def __init__(self, engine: Engine, url: str, *, node_id: str = "") -> None:
        super().__init__(engine, url, node_id=node_id)
        self._pg = engine.dialect.name == "postgresql"
        self._locks_guard = threading.Lock()
        self._node_locks: dict[str, NodeLock] = {}  # PostgreSQL: the nodes registered here
        self._lock_engine: Engine | None = None
        self._beat_locked: dict[str, bool] = {}  # node -> last stamp on its lock's session

    @property
    def beat_interval(self) -> float | None:
        return BEAT_INTERVAL if self._pg else None

    def _node_lock(self, node_id: str) -> NodeLock:
        with self._locks_guard:
            lock = self._node_locks.get(node_id)
            if lock is None:
                if self._lock_engine is None:
                    self._lock_engine = lock_engine(self.engine.url)
                lock = self._node_locks[node_id] = NodeLock(self._lock_engine, self._url,
                                                            node_id)
            return lock

    def _forget_lock(self, node_id: str) -> None:
        with self._locks_guard:
            lock = self._node_locks.pop(node_id, None)
        if lock is not None:
            lock.release()

    def release_node_locks(self) -> None:
        """End every node lock session (the store is closing)."""
        with self._locks_guard:
            locks, self._node_locks = list(self._node_locks.values()), {}
            engine, self._lock_engine = self._lock_engine, None
        for lock in locks:
            lock.release()
        if engine is not None:
            engine.dispose()

    def register_node(
        self, node_id: str, host: str, pid: int, started_at: datetime, *, ttl: timedelta,
        process_start: str | None = None,
    ) -> None:
        start = require_aware(started_at, "started_at")
        pg = self._pg
        if pg and not self._node_lock(node_id).hold():
            self._forget_lock(node_id)
            raise NodeIdInUse(node_id_in_use_message(self.get_node(node_id), node_id))
        values: dict[str, Any] = {"host": host, "pid": pid, "started_at": start,
                                  "heartbeat_at": sa.func.now() if pg else start,
                                  "process_start": process_start}
        with self._write() as conn:
            inserted = conn.execute(
                self._insert(scheduler_nodes)
                .values(node_id=node_id, **values)
                .on_conflict_do_nothing(index_elements=["node_id"])
                .returning(N.node_id)
            ).first()
            if inserted is not None:
                return
            with self._raw.cursor(conn) as cur:
                old = self._raw.get_node(cur, node_id)
            assert old is not None  # the insert found it, and this transaction holds it
            if self._may_take(conn, old, host, pid, process_start, start, ttl):
                conn.execute(sa.update(scheduler_nodes).where(N.node_id == node_id)
                             .values(**values))
                return
        if pg:
            self._forget_lock(node_id)
        raise NodeIdInUse(node_id_in_use_message(old, node_id))

    def _may_take(self, conn: Connection, old: NodeRecord, host: str, pid: int,
                  process_start: str | None, start: datetime, ttl: timedelta) -> bool:
        """Whether a registration may take ``old``'s row over: it is this very process
        again, or its holder is dead."""
        if old.host == host and old.pid == pid and old.process_start in (None, process_start):
            return True
        if self._pg:
            if old.process_start is not None:
                return True  # it had the lock, and the lock is ours now: its holder is gone
            # A row without a process identity has no lock to prove anything: its age.
            expired = conn.execute(sa.select(N.heartbeat_at <= sa.func.now() - ttl)
                                   .where(N.node_id == old.node_id)).scalar_one()
            return bool(expired)
        return dead_here(old.host, old.pid, old.process_start, old.heartbeat_at, start, ttl)

    def heartbeat(
        self, node_id: str, at: datetime, *, host: str | None = None, pid: int | None = None
    ) -> bool:
        when = require_aware(at, "at")
        q = sa.update(scheduler_nodes).where(N.node_id == node_id)
        if host is not None:
            q = q.where(N.host == host)
        if pid is not None:
            q = q.where(N.pid == pid)
        if self._pg:
            stamp = q.values(heartbeat_at=sa.func.now())  # the server's clock
            with self._locks_guard:
                lock = self._node_locks.get(node_id)
            if lock is not None:
                # On the lock's own session: a dropped connection is opened again and the
                # lock re-taken first.
                self._beat_locked[node_id] = False
                stamped = lock.execute(stamp)
                if stamped >= 0:
                    self._beat_locked[node_id] = stamped == 1
                    return stamped == 1
                # Another session holds the lock: another process took the id (its row
                # says so: the host/pid check fails), or the server still keeps this
                # node's previous session after a network cut and lets it go later.
                # Stamp through the pool meanwhile; the next heartbeat tries again.
            with self._write() as conn:
                return conn.execute(stamp).rowcount == 1
        with self._write() as conn:
            result = conn.execute(q.values(heartbeat_at=when))
        return result.rowcount == 1

    def lock_evidence(self, node_id: str) -> tuple[bool, bool]:
        with self._locks_guard:
            lock = self._node_locks.get(node_id)
        if lock is None:
            return False, False
        return self._beat_locked.get(node_id, False), lock.restart_seen

    def server_now(self) -> datetime | None:
        if not self._pg:
            return None
        # clock_timestamp(), not now(): the moment of reading, not the transaction's start.
        with self._read() as conn:
            at: datetime = conn.execute(sa.select(sa.func.clock_timestamp())).scalar_one()
        return require_aware(at, "server_now")

    def get_node(self, node_id: str) -> NodeRecord | None:
        with self._raw_read() as cur:
            return self._raw.get_node(cur, node_id)

    def _nodes(self, now: datetime, ttl: timedelta, dead: bool) -> list[NodeRecord]:
        at = require_aware(now, "now")
        with self._raw_read() as cur:
            return [n for n, d in self._raw.judged_nodes(cur, at, ttl) if d is dead]

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        return self._nodes(now, ttl, False)

    def dead_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        return self._nodes(now, ttl, True)

    def unregister_node(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute(sa.delete(scheduler_nodes).where(N.node_id == node_id))
        if self._pg:
            self._forget_lock(node_id)


__all__ = ["Nodes", "release_stale"]
