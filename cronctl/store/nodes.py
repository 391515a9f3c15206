"""Scheduler nodes: registration, heartbeats and liveness."""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa

from cronctl.store.connection import SqlConnection
from cronctl.store.records import (
    NodeIdInUse,
    NodeRecord,
    require_aware,
)
from cronctl.store.sqlrows import node_row
from cronctl.store.tables import (
    scheduler_nodes,
)


def node_id_in_use_message(old: NodeRecord) -> str:
    return (
        f"node id {old.node_id!r} is in use by a live scheduler (host {old.host}, "
        f"pid {old.pid}, last heartbeat {old.heartbeat_at.isoformat()}): stop it, or give "
        "this scheduler another node_id"
    )


class Nodes(SqlConnection):
    """Nodes of the Store Protocol (see :mod:`cronctl.store.base`)."""

    def register_node(
        self, node_id: str, host: str, pid: int, started_at: datetime, *, ttl: timedelta
    ) -> None:
        start = require_aware(started_at, "started_at")
        N = scheduler_nodes.c
        values = {"host": host, "pid": pid, "started_at": start, "heartbeat_at": start}
        with self._write() as conn:
            inserted = conn.execute(
                self._insert(scheduler_nodes)
                .values(node_id=node_id, **values)
                .on_conflict_do_nothing(index_elements=["node_id"])
                .returning(N.node_id)
            ).first()
            if inserted is not None:
                return
            # Take the row over only if its holder is dead or is us (a restart).
            taken = conn.execute(
                sa.update(scheduler_nodes)
                .where(
                    N.node_id == node_id,
                    sa.or_(
                        N.heartbeat_at <= start - ttl,
                        sa.and_(N.host == host, N.pid == pid),
                    ),
                )
                .values(**values)
            )
            if taken.rowcount == 1:
                return
            old = conn.execute(sa.select(scheduler_nodes).where(N.node_id == node_id)).first()
        assert old is not None
        raise NodeIdInUse(node_id_in_use_message(node_row(old)))

    def heartbeat(
        self, node_id: str, at: datetime, *, host: str | None = None, pid: int | None = None
    ) -> bool:
        when = require_aware(at, "at")
        N = scheduler_nodes.c
        q = sa.update(scheduler_nodes).where(N.node_id == node_id)
        if host is not None:
            q = q.where(N.host == host)
        if pid is not None:
            q = q.where(N.pid == pid)
        with self._write() as conn:
            result = conn.execute(q.values(heartbeat_at=when))
        return result.rowcount == 1

    def _nodes(self, condition: sa.ColumnElement[bool]) -> list[NodeRecord]:
        q = sa.select(scheduler_nodes).where(condition).order_by(scheduler_nodes.c.node_id)
        with self._read() as conn:
            return [node_row(r) for r in conn.execute(q)]

    def live_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        cutoff = require_aware(now, "now") - ttl
        return self._nodes(scheduler_nodes.c.heartbeat_at > cutoff)

    def expired_nodes(self, now: datetime, ttl: timedelta) -> list[NodeRecord]:
        cutoff = require_aware(now, "now") - ttl
        return self._nodes(scheduler_nodes.c.heartbeat_at <= cutoff)

    def unregister_node(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute(sa.delete(scheduler_nodes).where(scheduler_nodes.c.node_id == node_id))


__all__ = ["Nodes"]
