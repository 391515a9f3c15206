"""A read-only view of each job's last status and paused flag, for ``cronctl list``.

``list`` must start fast, so on SQLite (the default) this reads the file with the
standard library's ``sqlite3`` instead of importing SQLAlchemy; only a PostgreSQL URL
goes through the full store. A database that does not exist yet or has no tables simply
has no statuses.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from typing import Protocol
from urllib.parse import unquote

from cronctl.store.urls import kind_of, redact


class StatusSource(Protocol):
    def last_status(self, job_id: str) -> str | None: ...

    def is_paused(self, job_id: str) -> bool: ...


class _Fixed:
    """Statuses read once, up front: one query per job on an indexed column."""

    def __init__(self, last: dict[str, str], paused: set[str]) -> None:
        self._last = last
        self._paused = paused

    def last_status(self, job_id: str) -> str | None:
        return self._last.get(job_id)

    def is_paused(self, job_id: str) -> bool:
        return job_id in self._paused


def _sqlite_path(url: str) -> str | None:
    rest = url.split("://", 1)[1] if "://" in url else ""
    path = rest[1:] if rest.startswith("/") else rest
    path = path.split("?", 1)[0]
    return unquote(path) or None


def _from_sqlite(url: str, job_ids: Collection[str]) -> _Fixed | None:
    import os

    path = _sqlite_path(url)
    if path is None or path == ":memory:" or not os.path.exists(path):
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"job_executions", "job_schedules"} <= tables:
            return None
        last: dict[str, str] = {}
        for job_id in job_ids:
            row = conn.execute(
                "SELECT status FROM job_executions WHERE job_id = ? "
                "ORDER BY scheduled_at DESC, id DESC LIMIT 1",
                (job_id,),
            ).fetchone()
            if row is not None:
                last[job_id] = str(row[0])
        paused = {str(r[0]) for r in conn.execute("SELECT job_id FROM job_schedules WHERE paused")}
        return _Fixed(last, paused)
    except sqlite3.DatabaseError as exc:
        from cronctl.errors import StoreError

        raise StoreError(f"cannot read the state database {redact(url)}: {exc}") from None
    finally:
        conn.close()


def read_statuses(url: str, job_ids: Collection[str], *, node_id: str) -> StatusSource | None:
    """Last status and paused flag per job, or ``None`` when there is no state to show."""
    kind = kind_of(url)
    if kind == "memory":
        return None
    if kind == "sqlite":
        return _from_sqlite(url, job_ids)
    from cronctl.store import open_store

    store = open_store(url, node_id=node_id, auto_migrate=False)
    try:
        latest = store.latest_executions(list(job_ids))
        paused = {s.job_id for s in store.list_schedules() if s.paused}
    finally:
        store.close()
    return _Fixed({job: str(rec.status) for job, rec in latest.items()}, paused)
