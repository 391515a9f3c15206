"""Shared fixtures. PostgreSQL tests take ``postgres_url``: it connects to
``$CRONCTL_TEST_POSTGRES_URL``; under ``CI=true`` an unreachable or unset server FAILS the
test, elsewhere it skips with the reason shown (pytest -ra prints it)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _unavailable(reason: str) -> None:
    if _in_ci():
        pytest.fail(f"PostgreSQL required in CI: {reason}")
    pytest.skip(f"PostgreSQL not available: {reason}")


@pytest.fixture(scope="session")
def postgres_server_url() -> str:
    """The server URL (``postgresql+psycopg://...``), checked to accept connections."""
    url = os.environ.get("CRONCTL_TEST_POSTGRES_URL", "")
    if not url:
        _unavailable("CRONCTL_TEST_POSTGRES_URL is not set")
    import psycopg

    try:
        with psycopg.connect(_libpq(url), connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        _unavailable(f"cannot connect: {exc}".splitlines()[0])
    return url


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A fresh, empty database for this test only, dropped afterwards."""
    import psycopg

    name = f"cronctl_test_{uuid.uuid4().hex[:12]}"
    admin = _libpq(postgres_server_url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = postgres_server_url.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
def _process_state_restored() -> Iterator[None]:
    """In-process CLI calls append ``[scheduler] python_path`` to ``sys.path`` and set the
    process-wide service registry, as one ``cronctl`` process should; tests share a
    process, so each one starts from the state before it (otherwise entry points found
    through one test's ``python_path`` would appear in the next test's jobs)."""
    import sys

    from cronctl.jobs import registry

    path = list(sys.path)
    default = registry._default
    yield
    sys.path[:] = path
    registry._default = default
