"""Whether a scheduler node is alive, judged without its wall clock (SPEC section 4,
"Liveness never trusts a node's wall clock").

PostgreSQL: a registered node holds a session-level advisory lock keyed on its id, on a
connection of its own (:class:`NodeLock`) that its store keeps open until the node
unregisters or the store closes. The server releases the lock the moment that
connection drops, so a scheduler killed with SIGKILL loses it at once. Heartbeats are
stamped, and their ages judged, with the server's clock. A node is dead when

- its lock is free and its last heartbeat is older than :data:`LOCK_GRACE` (a live node
  whose lock connection dropped takes the lock again at its next heartbeat, at most
  :data:`BEAT_INTERVAL` later), unless the server itself started less than
  :data:`RESTART_GRACE` ago (a restart drops every lock: the nodes get time to take
  theirs again); or
- its last heartbeat is older than ``ttl`` (hung, or cut off behind a connection the
  server still believes open).

SQLite (one host): a node is dead when its recorded process (pid and start time, see
:mod:`cronctl.processes`) no longer runs, or ran in an earlier boot of this host.

Rows without a process identity (written by a cronctl before liveness locks, or by
hand) and rows of another host on SQLite (a network file system is not supported) fall
back on the heartbeat age and ``ttl``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cronctl import processes
from cronctl.store.engine import PG_CONNECT_TIMEOUT_S, translated
from cronctl.store.records import StoreUnavailable
from cronctl.store.tables import UtcDateTime

BEAT_INTERVAL = 0.5  # seconds: how often a live node heartbeats on PostgreSQL
LOCK_GRACE = timedelta(seconds=1.5)
RESTART_GRACE = timedelta(seconds=5)

# The lock key: a 64-bit hash the server computes, the same for every node of a cluster.
_KEY = "hashtextextended('cronctl-node:' || {}, 0)"
# Advisory locks held in this database, as the bigint keys they were taken with (a bigint
# key shows in pg_locks as classid = high 32 bits, objid = low 32 bits, objsubid = 1).
_HELD = (
    "held AS (SELECT (classid::bigint << 32) | objid::bigint AS k FROM pg_locks "
    "WHERE locktype = 'advisory' AND objsubid = 1 AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))"
)
_PG_DEAD = (
    "((n.process_start IS NOT NULL AND " + _KEY.format("n.node_id") + " NOT IN "
    "(SELECT k FROM held) AND n.heartbeat_at < now() - :grace "
    "AND pg_postmaster_start_time() < now() - :restart) "
    "OR n.heartbeat_at <= now() - :ttl)"
)
PG_NODES = sa.text(
    f"WITH {_HELD} SELECT n.node_id, n.host, n.pid, n.started_at, n.heartbeat_at, "
    f"n.process_start, {_PG_DEAD} AS dead FROM scheduler_nodes n ORDER BY n.node_id"
).columns(started_at=UtcDateTime(), heartbeat_at=UtcDateTime())
PG_RELEASE_STALE = sa.text(
    f"WITH {_HELD} DELETE FROM guard_locks WHERE node_id NOT IN "
    "(SELECT node_id FROM scheduler_nodes) OR node_id IN "
    f"(SELECT n.node_id FROM scheduler_nodes n WHERE {_PG_DEAD})")
PG_RELEASE_STALE_WAITERS = sa.text(
    f"WITH {_HELD} DELETE FROM group_waiters WHERE node_id NOT IN "
    "(SELECT node_id FROM scheduler_nodes) OR node_id IN "
    f"(SELECT n.node_id FROM scheduler_nodes n WHERE {_PG_DEAD})")


def pg_params(ttl: timedelta) -> dict[str, Any]:
    return {"grace": LOCK_GRACE, "restart": RESTART_GRACE, "ttl": ttl}


def dead_here(host: str, pid: int, ident: str | None, heartbeat_at: datetime,
              now: datetime, ttl: timedelta) -> bool:
    """The SQLite rule (see the module docstring) for one node row."""
    if ident is not None and processes.on_this_boot(ident):
        return not processes.alive(pid, ident)
    if ident is not None and processes.boot_id() is not None and host == socket.gethostname():
        return True  # recorded during an earlier boot of this host
    return heartbeat_at <= now - ttl


class NodeLock:
    """The PostgreSQL session holding one node's advisory lock. Thread-safe.

    Its connection is outside the store's pool (nothing else ever uses it) and in
    autocommit, so it never holds a transaction open."""

    def __init__(self, engine: Engine, url: str, node_id: str) -> None:
        self._engine = engine
        self._url = url
        self.node_id = node_id
        self._lock = threading.Lock()
        self._conn: Connection | None = None

    def hold(self) -> bool:
        """Make sure the lock is held (re-connecting and re-taking it after the connection
        dropped); False when another session holds it."""
        with self._lock:
            if self._conn is not None and self._ping():
                return True
            return self._take()

    def execute(self, statement: sa.Executable, params: dict[str, Any] | None = None) -> int:
        """Run ``statement`` on the lock's own connection, holding the lock first (-1 when
        another session holds it); returns the rowcount. A connection that drops on the
        way is opened again, and the lock re-taken, once."""
        with self._lock:
            for last in (False, True):
                if self._conn is None and not self._take():
                    return -1
                assert self._conn is not None
                try:
                    with translated(self._url):
                        return int(self._conn.execute(statement, params or {}).rowcount)
                except StoreUnavailable:
                    self._drop()
                    if last:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def release(self) -> None:
        """Give the lock up (closing the connection releases it)."""
        with self._lock:
            self._drop()

    def _ping(self) -> bool:
        assert self._conn is not None
        try:
            with translated(self._url):
                self._conn.execute(sa.text("SELECT 1"))
        except StoreUnavailable:
            self._drop()
            return False
        return True

    def _take(self) -> bool:
        self._drop()
        with translated(self._url):
            conn = self._engine.connect()
            try:
                got = conn.execute(sa.text(f"SELECT pg_try_advisory_lock({_KEY.format(':k')})"),
                                   {"k": self.node_id}).scalar()
            except BaseException:
                conn.close()
                raise
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # Never back to a pool: the session (and its lock) ends here. A broken
            # connection may complain while it is closed; it is what we are discarding.
            with contextlib.suppress(Exception):
                conn.invalidate()
                conn.close()


def lock_engine(url: sa.engine.URL) -> Engine:
    """The engine of the node lock sessions: no pool, autocommit."""
    return sa.create_engine(
        url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S,
                      "application_name": "cronctl-node"})


__all__ = ["BEAT_INTERVAL", "LOCK_GRACE", "NodeLock", "PG_NODES", "PG_RELEASE_STALE",
           "PG_RELEASE_STALE_WAITERS",
           "RESTART_GRACE", "dead_here", "lock_engine", "pg_params"]
