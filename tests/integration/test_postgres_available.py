"""Proves the CI wiring: the PostgreSQL server is reachable and a per-test database works."""

from __future__ import annotations

import pytest


@pytest.mark.postgres
def test_postgres_per_test_database_accepts_writes(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url.replace("+psycopg", "")) as conn:
        conn.execute("CREATE TABLE probe (n int)")
        conn.execute("INSERT INTO probe VALUES (41), (1)")
        row = conn.execute("SELECT sum(n) FROM probe").fetchone()
    assert row is not None and row[0] == 42
