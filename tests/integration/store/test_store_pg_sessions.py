"""Every PostgreSQL session of cronctl gives up within the bounds of
:mod:`cronctl.store.pgsession` (issue: a silent network path left a node hanging): the
store's pooled sessions, the node lock session and the read commands' session all carry
the statement, keepalive and user timeouts, and an ``options`` written in the URL still
wins. A statement stuck behind a lock ends with a clear, transient error."""

from __future__ import annotations

import threading
from urllib.parse import quote

import psycopg
import pytest
import sqlalchemy as sa

from cronctl.store import open_store
from cronctl.store.engine import make_engine
from cronctl.store.liveness import lock_engine
from cronctl.store.reader import open_reader
from cronctl.store.records import StoreUnavailable
from cronctl.store.urls import database_error

pytestmark = pytest.mark.postgres

SETTINGS = ("statement_timeout", "tcp_user_timeout", "tcp_keepalives_idle",
            "tcp_keepalives_interval", "tcp_keepalives_count")


def _shown(conn: sa.Connection) -> dict[str, str]:
    return {name: str(conn.exec_driver_sql(f"SHOW {name}").scalar()) for name in SETTINGS}


EXPECTED = {"statement_timeout": "10s", "tcp_user_timeout": "8000",
            "tcp_keepalives_idle": "3", "tcp_keepalives_interval": "1",
            "tcp_keepalives_count": "3"}


def test_store_and_lock_sessions_carry_the_timeouts(postgres_url: str) -> None:
    store = open_store(postgres_url, node_id="n1")
    try:
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            assert _shown(conn) == EXPECTED
        engine = lock_engine(sa.engine.make_url(postgres_url))
        with engine.connect() as conn:
            assert _shown(conn) == EXPECTED
            # the client side: libpq's own keepalive and user timeout parameters
            params = conn.connection.dbapi_connection.info.get_parameters()  # type: ignore[union-attr]
            assert params["tcp_user_timeout"] == "8000"
            assert params["keepalives_idle"] == "3"
        engine.dispose()
    finally:
        store.close()


def test_read_commands_session_carries_the_timeouts(postgres_url: str) -> None:
    open_store(postgres_url, node_id="n1").close()  # at the head, so the reader opens
    reader = open_reader(postgres_url)
    assert reader is not None
    try:
        conn = reader._conn  # type: ignore[attr-defined]
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "10s"
        assert conn.info.get_parameters()["tcp_user_timeout"] == "8000"
    finally:
        reader.close()


def test_options_in_the_url_win(postgres_url: str) -> None:
    sep = "&" if "?" in postgres_url else "?"
    url = f"{postgres_url}{sep}options={quote('-c statement_timeout=7000')}"
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "7s"
        assert conn.exec_driver_sql("SHOW tcp_user_timeout").scalar() == "8000"
    engine.dispose()


def test_a_statement_stuck_behind_a_lock_ends_with_a_clear_error(postgres_url: str) -> None:
    url = postgres_url + ("&" if "?" in postgres_url else "?") + "options=" + quote(
        "-c statement_timeout=300")
    engine = make_engine(url)
    holder = psycopg.connect(postgres_url.replace("postgresql+psycopg", "postgresql"))
    try:
        holder.execute("CREATE TABLE IF NOT EXISTS stuck (x int)")
        holder.commit()
        holder.execute("LOCK TABLE stuck IN ACCESS EXCLUSIVE MODE")
        done = threading.Event()
        with pytest.raises(sa.exc.OperationalError) as caught, engine.connect() as conn:
            conn.exec_driver_sql("SELECT * FROM stuck")
            done.set()
        assert not done.is_set()
        error = database_error(str(caught.value.orig), url, transient=True)
        assert isinstance(error, StoreUnavailable)
        assert "did not answer in time" in str(error)
        assert "check that the server is running" not in str(error)
    finally:
        holder.rollback()
        holder.close()
        engine.dispose()


def test_sqlite_disk_full_says_so() -> None:
    error = database_error("database or disk is full", "sqlite:////var/lib/x.db",
                           transient=True)
    assert isinstance(error, StoreUnavailable)
    assert "disk is full" in str(error)
    assert "check that the server is running" not in str(error)
