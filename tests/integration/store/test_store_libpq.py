"""``cronctl.store.libpq``, the read commands' PostgreSQL client, against the real server:
parameters of every type the read queries send, every column type they read, NULLs,
errors, and the cases it leaves to psycopg."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from cronctl.store import libpq

pytestmark = pytest.mark.postgres


@pytest.fixture
def conn(postgres_url: str) -> Iterator[libpq.Connection]:
    url = "postgresql://" + postgres_url.partition("://")[2]
    got = libpq.connect(url, connect_timeout=5, application_name="cronctl-test")
    assert got is not None, "no libpq found: psycopg's wheel bundles one"
    try:
        yield got
    finally:
        got.close()


def _one(conn: libpq.Connection, sql: str, params: object = ()) -> tuple[object, ...]:
    cur = conn.cursor()
    cur.execute(sql, params)  # type: ignore[arg-type]
    row = cur.fetchone()
    assert row is not None and cur.fetchone() is None
    return row


def test_parameters_and_columns_round_trip(conn: libpq.Connection) -> None:
    at = datetime(2026, 3, 8, 7, 0, 0, 123456, tzinfo=UTC)
    east = at.astimezone(timezone(timedelta(hours=5, minutes=30)))
    row = _one(conn, "SELECT %s::bigint, %s::int, %s::float8, %s::text, %s::varchar(9), "
               "%s::boolean, %s::boolean, %s::timestamptz, %s::timestamptz, %s::text, "
               "%s::timestamptz + %s::interval",
               (2**62, 7, 0.1, "it's %s \"x\"", "ünï", True, False, at, east, None, at,
                timedelta(minutes=90, microseconds=5)))
    assert row == (2**62, 7, 0.1, "it's %s \"x\"", "ünï", True, False, at, at, None,
                   at + timedelta(minutes=90, microseconds=5))
    stamp = row[7]
    assert isinstance(stamp, datetime) and stamp.utcoffset() == timedelta(0)


def test_aggregates_and_numeric(conn: libpq.Connection) -> None:
    row = _one(conn, "SELECT count(*), sum(g::bigint), 1.50::numeric, max(g)::smallint "
               "FROM generate_series(1, 4) AS g")
    assert row == (4, Decimal(10), Decimal("1.50"), 4)


def test_named_parameters_and_literal_percent(conn: libpq.Connection) -> None:
    row = _one(conn, "SELECT %(a)s::int + %(b)s::int, %(a)s::int, '100%%'", {"a": 2, "b": 3})
    assert row == (5, 2, "100%")


def test_rows_in_order_and_empty_results(conn: libpq.Connection) -> None:
    cur = conn.cursor()
    cur.execute("SELECT g, g::text AS t FROM generate_series(1, 3) AS g ORDER BY 1 DESC")
    assert cur.fetchall() == [(3, "3"), (2, "2"), (1, "1")]
    cur.execute("SELECT 1 WHERE false")
    assert cur.fetchall() == [] and cur.fetchone() is None


def test_errors(conn: libpq.Connection) -> None:
    cur = conn.cursor()
    with pytest.raises(libpq.Error, match='^relation "no_such_table" does not exist$'):
        cur.execute("SELECT * FROM no_such_table")
    assert _one(conn, "SELECT 1") == (1,)  # autocommit: the connection is still usable
    with pytest.raises(libpq.InterfaceError, match="fewer parameters"):
        cur.execute("SELECT %s, %s", (1,))
    with pytest.raises(libpq.InterfaceError, match="more parameters"):
        cur.execute("SELECT %s", (1, 2))
    with pytest.raises(libpq.InterfaceError, match="no parameter named b"):
        cur.execute("SELECT %(b)s", {"a": 1})
    with pytest.raises(libpq.InterfaceError, match="naive datetime"):
        cur.execute("SELECT %s", (datetime(2026, 1, 1),))
    with pytest.raises(libpq.InterfaceError, match="type this client does not read"):
        cur.execute("SELECT '{}'::jsonb")
    conn.close()
    with pytest.raises(libpq.InterfaceError, match="closed"):
        cur.execute("SELECT 1")


def test_an_unreachable_server_and_an_unparsable_url() -> None:
    with pytest.raises(libpq.OperationalError, match="127.0.0.1"):
        libpq.connect("postgresql://u:secret@127.0.0.1:1/nothing", connect_timeout=2,
                      application_name="cronctl-test")
    # A URL libpq cannot parse is left to the caller (psycopg, then the full store).
    assert libpq.connect("postgresql://host/db?no_such_option=1", connect_timeout=2,
                         application_name="cronctl-test") is None
