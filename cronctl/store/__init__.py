"""Durable state: the :class:`Store` Protocol and :func:`open_store`.

Importing this package is cheap: SQLAlchemy, alembic and psycopg are imported only when
a SQL store is opened, and the names below load on first use (:mod:`cronctl.lazy`), so
``cronctl.store.urls`` (which every command's configuration reads) builds no record
class."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cronctl import lazy

if TYPE_CHECKING:
    from cronctl.ids import occurrence_id
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

def open_store(url: str, *, node_id: str, auto_migrate: bool = True) -> Store:
    """Open the store named by ``url``.

    ``"none"`` gives the SQL store on a private temporary SQLite file that is removed
    when it closes (nothing persisted; every_instance jobs only);
    ``sqlite:///path`` and ``postgresql+psycopg://...`` give the SQL store, migrated to
    the current schema first when ``auto_migrate`` (safe when several nodes start at
    once). Raises :class:`cronctl.errors.StoreError` with a message that says what to do.
    """
    from cronctl.store.sql import SqlStore

    if url.strip().lower() == "none":
        return SqlStore.open_private(node_id=node_id)
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

_HOMES = {
    "occurrence_id": "cronctl.ids",
    **{name: ".base" for name in ("ExecutionRecord", "LogLine", "NodeIdInUse", "NodeRecord",
                                   "ScheduleState", "SchemaMismatch", "Store",
                                   "StoreUnavailable", "TriggerRequest")},
}

__getattr__, __dir__ = lazy.exports(__name__, _HOMES, __all__)
