"""The store backends the contract suite runs against: SQLite (a file in tmp_path) and
PostgreSQL (a fresh database per test).

``store_factory()`` opens another Store on the SAME database (another engine, so other
connections)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cronctl.store import Store, open_store

StoreFactory = Callable[[], Store]

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(request.param)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store_factory(store_url: str) -> Iterator[StoreFactory]:
    opened: list[Store] = []

    def factory() -> Store:
        store = open_store(store_url, node_id="n1")
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    return store_factory()
