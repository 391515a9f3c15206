"""A read-only view of each job's last status and paused flag, for ``cronctl list``.

``list`` must start fast: a database at the schema head is read through
:mod:`cronctl.store.reader` (``sqlite3`` or ``psycopg``, no SQLAlchemy), anything else
through the full store, never upgraded from here. A SQLite file that does not exist yet
simply has no statuses (``list`` never creates it).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import TYPE_CHECKING, Protocol

from cronctl.store.urls import kind_of, sqlite_path

if TYPE_CHECKING:
    from cronctl.store.base import Reads, Store


class StatusSource(Protocol):
    def last_status(self, job_id: str) -> str | None: ...

    def is_paused(self, job_id: str) -> bool: ...


class _Fixed:
    """Statuses read once, up front: one indexed row per job."""

    def __init__(self, last: dict[str, str], paused: set[str]) -> None:
        self._last = last
        self._paused = paused

    def last_status(self, job_id: str) -> str | None:
        return self._last.get(job_id)

    def is_paused(self, job_id: str) -> bool:
        return job_id in self._paused


def read_statuses(url: str, job_ids: Collection[str], *, node_id: str) -> StatusSource | None:
    """Last status and paused flag per job, or ``None`` when there is no state to show."""
    kind = kind_of(url)
    if kind == "memory":
        return None
    if kind == "sqlite":
        path = sqlite_path(url)
        if path is None or (not path.startswith("file:") and not os.path.exists(path)):
            return None
    from cronctl.store.reader import DbReader, open_reader

    source: DbReader | Store | None = open_reader(url)
    if source is None:
        from cronctl.store import open_store

        source = open_store(url, node_id=node_id, auto_migrate=False)
    try:
        return statuses_from(source, job_ids)
    finally:
        source.close()


def statuses_from(source: Reads, job_ids: Collection[str]) -> StatusSource:
    """Last status and paused flag per job, read now from an open store or reader."""
    latest = source.latest_executions(job_ids)
    paused = source.paused_job_ids()
    return _Fixed({job: rec.status.value for job, rec in latest.items()}, paused)
