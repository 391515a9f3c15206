"""Engines for SQLite and PostgreSQL, and the translation of driver errors into one
:class:`StoreError` that names the database (password redacted) and says what to do."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import Engine

from cronctl.errors import StoreError, first_line
from cronctl.store.pgsession import session_args
from cronctl.store.sqlitefile import refuse_if_held_deleted
from cronctl.store.urls import database_error, kind_of, redact, sqlite_path

SQLITE_BUSY_TIMEOUT_MS = 5000
WAL_CHECKPOINT_PAGES = 256  # ~1 MiB of 4 KiB pages
WAL_LIMIT_BYTES = 1 << 20


def normalize_url(url: str) -> str:
    """Use psycopg 3 for ``postgresql://`` and ``postgres://`` URLs (the only driver we ship)."""
    url = url.strip()
    for prefix in ("postgresql://", "postgres://"):
        if url.lower().startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (``sqlite:///...`` or ``postgresql+psycopg://...``).

    SQLite: WAL, ``busy_timeout``, ``foreign_keys=ON``, and transactions begun explicitly
    so that write transactions can say ``BEGIN IMMEDIATE`` (see :func:`writer`): a
    deferred transaction that later writes can deadlock against another writer."""
    kind = kind_of(url)
    url = normalize_url(url)
    try:
        parsed = sa.engine.make_url(url)
    except exc.ArgumentError:
        raise StoreError(f"cannot parse database URL {redact(url)!r}") from None
    if kind == "sqlite":
        path = sqlite_path(url)
        if path is not None and (why := refuse_if_held_deleted(path)):
            raise StoreError(why)  # (a connection would create the file)
        if path is not None and not path.startswith("file:"):
            create_private(path)
            return _sqlite_engine(parsed, existing=path)
        return _sqlite_engine(parsed)
    return sa.create_engine(
        parsed,
        pool_pre_ping=True,
        connect_args=session_args("cronctl", user_options(parsed)),
    )


def user_options(parsed: sa.engine.URL) -> str | None:
    """The ``options`` parameter written in the URL, if any (kept after cronctl's)."""
    value = parsed.query.get("options")
    if isinstance(value, tuple):
        return " ".join(value) or None
    return value or None


def create_private(path: str) -> None:
    """Create a new SQLite file readable by its owner only (0600; its -wal and -shm take
    the same mode): it holds job output and parameters. An empty file is an empty
    database. An existing file keeps its mode; a missing directory is SQLite's error."""
    # (it exists, or cannot be made here: connecting says why, once)
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _sqlite_engine(parsed: sa.engine.URL, existing: str | None = None) -> Engine:
    """``existing``: the file (made by :func:`create_private`) every connection opens
    without creating it: a connection made again after the file was deleted under the
    node (SQLite drops one whose writes it refuses) would otherwise create an empty
    database at the path beside the deleted one, which the node's own check then found as
    "replaced" (see :mod:`cronctl.store.sqlitefile`)."""
    memory = parsed.database in (None, "", ":memory:")
    timeout = SQLITE_BUSY_TIMEOUT_MS / 1000
    creator = None
    if existing is not None:
        uri = f"file:{urllib.parse.quote(os.path.abspath(existing))}?mode=rw"

        def creator() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=timeout)

    engine = sa.create_engine(
        parsed,
        connect_args={"check_same_thread": False, "timeout": timeout},
        poolclass=sa.pool.StaticPool if memory else None,
        **({} if creator is None else {"creator": creator}),
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 module; "begin" below emits BEGIN.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        try:
            cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys = ON")
            if not memory:
                # A new (empty) file: before WAL, which writes page 1 with the auto_vacuum
                # mode of then; afterwards it cannot change without a VACUUM (see
                # cronctl.store.retention). Existing files are left alone.
                if cur.execute("PRAGMA page_count").fetchone()[0] == 0:
                    cur.execute("PRAGMA auto_vacuum = INCREMENTAL")
                _enable_wal(cur)
                cur.execute("PRAGMA synchronous = NORMAL")
                # The WAL on a bound: checkpointed every WAL_CHECKPOINT_PAGES pages (SQLite's
                # default of 1,000 let it grow to 4 MB, and filled a small disk after 41
                # executions' logs), and cut back to WAL_LIMIT_BYTES once checkpointed.
                cur.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
                cur.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
        finally:
            cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def _enable_wal(cur: Any) -> None:
    """Switch the file to WAL (persistent: only the first connection ever does it).

    SQLite does not call the busy handler while changing the journal mode, so a
    connection racing another one's first transaction gets "database is locked" at once;
    retry for as long as ``busy_timeout`` would have waited."""
    import sqlite3

    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            row = cur.execute("PRAGMA journal_mode").fetchone()
            if row is not None and str(row[0]).lower() == "wal":
                return
            cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            text = str(error).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def writer(engine: Engine) -> Engine:
    """The engine to use for write transactions (``BEGIN IMMEDIATE`` on SQLite)."""
    if engine.dialect.name == "sqlite":
        return engine.execution_options(sqlite_begin="IMMEDIATE")
    return engine


def translate(error: exc.SQLAlchemyError, url: str) -> StoreError:
    """One clear, password-free error for ``error`` raised while using ``url``."""
    transient = isinstance(error, exc.OperationalError | exc.InterfaceError
                           | exc.DisconnectionError)
    return database_error(first_line(getattr(error, "orig", None) or error), url,
                          transient=transient)


@contextmanager
def translated(url: str) -> Iterator[None]:
    """Turn SQLAlchemy errors raised inside into :func:`translate`'s StoreError. The
    original is dropped from the chain on purpose: nothing that might carry connection
    details is printed, not even with ``--verbose``."""
    try:
        yield
    except exc.SQLAlchemyError as error:
        raise translate(error, url) from None


__all__ = ["make_engine", "normalize_url", "translate", "translated", "user_options",
           "writer"]
