"""Whether a scheduler node is alive, judged without its wall clock (docs/behaviour.md#liveness,
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
import threading
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cronctl.store.engine import translated, user_options
from cronctl.store.pgsession import session_args
from cronctl.store.reads import (
    LOCK_GRACE,
    PG_HELD,
    PG_NODE_KEY,
    RESTART_GRACE,
    dead_here,
    pg_dead,
    pg_params,
)
from cronctl.store.records import StoreUnavailable

BEAT_INTERVAL = 0.5  # seconds: how often a live node heartbeats on PostgreSQL

_DEAD = pg_dead(lambda name: f":{name}")
PG_RELEASE_STALE = sa.text(
    f"WITH {PG_HELD} DELETE FROM guard_locks WHERE (node_id NOT IN "
    "(SELECT node_id FROM scheduler_nodes) OR node_id IN "
    f"(SELECT n.node_id FROM scheduler_nodes n WHERE {_DEAD})) "
    "AND execution_id <> ALL(CAST(:keep AS BIGINT[]))")
PG_RELEASE_STALE_WAITERS = sa.text(
    f"WITH {PG_HELD} DELETE FROM group_waiters WHERE node_id NOT IN "
    "(SELECT node_id FROM scheduler_nodes) OR node_id IN "
    f"(SELECT n.node_id FROM scheduler_nodes n WHERE {_DEAD})")


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
        # A connection refused since the last statement that ran here, because the server
        # is starting up or shutting down: proof that it restarts (docs/liveness.md).
        self.restart_seen = False

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
                        count = int(self._conn.execute(statement, params or {}).rowcount)
                    self.restart_seen = False
                    return count
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
            try:
                conn = self._engine.connect()
            except sa.exc.DBAPIError as error:
                self.restart_seen = self.restart_seen or restarting(error)
                raise
            try:
                take = f"SELECT pg_try_advisory_lock({PG_NODE_KEY.format(':k')})"
                got = conn.execute(sa.text(take), {"k": self.node_id}).scalar()
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


_RESTARTING = ("the database system is starting up", "the database system is shutting down",
               "the database system is in recovery mode",
               "the database system is not yet accepting connections")


def restarting(error: BaseException) -> bool:
    """Whether a failed connection attempt was refused by a server that is starting up or
    shutting down (SQLSTATE 57P03): only the server says so, a cut path never does."""
    orig = getattr(error, "orig", error)
    if getattr(orig, "sqlstate", None) == "57P03":
        return True
    text = str(orig)
    return any(phrase in text for phrase in _RESTARTING)


def lock_engine(url: sa.engine.URL) -> Engine:
    """The engine of the node lock sessions: no pool, autocommit."""
    return sa.create_engine(
        url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT",
        connect_args=session_args("cronctl-node", user_options(url)))


__all__ = ["BEAT_INTERVAL", "LOCK_GRACE", "NodeLock", "PG_RELEASE_STALE", "restarting",
           "PG_RELEASE_STALE_WAITERS",
           "RESTART_GRACE", "dead_here", "lock_engine", "pg_params"]
