"""The SQL store: one implementation of the Store Protocol for SQLite and PostgreSQL
(SQLAlchemy Core, with prepared SQL on the hot paths).

Elections and compare-and-set are single statements whose outcome the database decides:
``INSERT ... ON CONFLICT DO NOTHING RETURNING id`` and ``UPDATE ... WHERE status IN
(...)``. Each concern lives in its own module; this class only combines them and opens
and closes the database.

``database = "none"`` is this same store on a private SQLite file in a temporary
directory, removed when the store closes (or the process exits): one code path for every
backend, and the scheduler's I/O thread and scheduler thread each get their own
connection, which one shared in-memory connection could not give them safely.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from sqlalchemy.engine import Engine

from cronctl.store.audit import AuditLog
from cronctl.store.engine import make_engine, normalize_url
from cronctl.store.executions import Executions
from cronctl.store.locks import GuardLocks
from cronctl.store.logs import JobLogs
from cronctl.store.migrate import check_known, current_revision, ensure_schema
from cronctl.store.nodes import Nodes
from cronctl.store.notices import Notices
from cronctl.store.records import SchemaMismatch
from cronctl.store.retention import Retention
from cronctl.store.schedules import Schedules
from cronctl.store.schema import HEAD
from cronctl.store.sessions import ApiSessionRows
from cronctl.store.skips import SkipLedger
from cronctl.store.sqlitefile import FileId, file_id, replaced
from cronctl.store.triggers import TriggerRequests
from cronctl.store.urls import kind_of, sqlite_path


class SqlStore(Schedules, Executions, GuardLocks, JobLogs, TriggerRequests, Nodes,
               SkipLedger, Notices, Retention, AuditLog, ApiSessionRows):
    """The Store Protocol over SQLite or PostgreSQL. Thread-safe (a connection pool)."""

    def __init__(self, engine: Engine, url: str, *, node_id: str = "") -> None:
        super().__init__(engine, url, node_id=node_id)
        self._private: Path | None = None
        self._file: tuple[str, FileId | None] | None = None  # SQLite: the file opened

    @classmethod
    def open(cls, url: str, *, node_id: str = "", auto_migrate: bool = True) -> SqlStore:
        url = normalize_url(url)
        path = sqlite_path(url) if kind_of(url) == "sqlite" else None
        engine = make_engine(url)
        try:
            ensure_schema(engine, url, auto_migrate=auto_migrate)
        except BaseException:
            engine.dispose()
            raise
        store = cls(engine, url, node_id=node_id)
        if path is not None:
            store._file = (path, file_id(path))
        return store

    def file_replaced(self) -> str | None:
        if self._file is None or self._file[1] is None:
            return None
        return replaced(*self._file)  # type: ignore[arg-type]

    def check_schema(self) -> None:
        with self._read() as conn:
            revision = current_revision(conn)
        check_known(self._url, revision)
        if revision != HEAD:
            raise SchemaMismatch(f"database {self.display_url} is at revision {revision}, "
                                 f"this cronctl runs on {HEAD}: run `cronctl db upgrade`")

    @classmethod
    def open_private(cls, *, node_id: str = "") -> SqlStore:
        """``database = "none"``: a fresh SQLite file that nobody else sees, deleted by
        :meth:`close` (or at exit). ``persistent`` is False: nothing outlives the process,
        so the scheduler treats every job as untracked and every misfire as skipped."""
        from cronctl.store.tables import metadata

        folder = Path(tempfile.mkdtemp(prefix="cronctl-none-"))
        url = f"sqlite:///{folder / 'state.db'}"
        engine = make_engine(url)
        # No alembic: nobody ever upgrades this file, so the tables are created directly.
        metadata.create_all(engine)
        store = cls(engine, url, node_id=node_id)
        store.persistent = False
        store.kind = "memory"
        store.display_url = "none"
        store._private = folder
        atexit.register(store._remove_private)
        return store

    def _remove_private(self) -> None:
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)

    def close(self) -> None:
        self.release_node_locks()
        self.engine.dispose()
        if self._private is not None:
            atexit.unregister(self._remove_private)
            self._remove_private()


__all__ = ["SqlStore"]
