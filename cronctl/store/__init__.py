"""Durable state: the :class:`Store` Protocol and :func:`open_store`.

Importing this package is cheap: SQLAlchemy, alembic and psycopg are imported only when
a SQL store is opened."""

from __future__ import annotations

from cronctl.store.base import (
    ExecutionRecord,
    LogLine,
    NodeIdInUse,
    NodeRecord,
    ScheduleState,
    SchemaMismatch,
    Store,
    StoreUnavailable,
    TriggerRequest,
)
from cronctl.store.ids import occurrence_id


def open_store(url: str, *, node_id: str, auto_migrate: bool = True) -> Store:
    """Open the store named by ``url``.

    ``"none"`` gives the in-memory store (nothing persisted; every_instance jobs only);
    ``sqlite:///path`` and ``postgresql+psycopg://...`` give the SQL store, migrated to
    the current schema first when ``auto_migrate`` (safe when several nodes start at
    once). Raises :class:`cronctl.errors.StoreError` with a message that says what to do.
    """
    if url.strip().lower() == "none":
        from cronctl.store.memory import MemoryStore

        return MemoryStore(node_id=node_id)
    from cronctl.store.sql import SqlStore

    return SqlStore.open(url, node_id=node_id, auto_migrate=auto_migrate)


__all__ = [
    "ExecutionRecord",
    "LogLine",
    "NodeIdInUse",
    "NodeRecord",
    "ScheduleState",
    "SchemaMismatch",
    "Store",
    "StoreUnavailable",
    "TriggerRequest",
    "occurrence_id",
    "open_store",
]
