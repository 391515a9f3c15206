"""``database_identity``: one name for one database on this host, whatever URL spelling
each scheduler uses, and another for any other database (recovery ends only the stray
processes of its own database's attempts: see cronctl.dispatch.escapees)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cronctl.dispatch.escapees import scope_of
from cronctl.store.urls import database_identity


def test_one_sqlite_file_is_one_database_however_it_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "state.db"
    db.write_bytes(b"")
    (tmp_path / "link.db").symlink_to(db)
    monkeypatch.chdir(tmp_path)
    names = {database_identity(f"sqlite:///{db}"), database_identity("sqlite:///state.db"),
             database_identity(f"sqlite:///{tmp_path / 'link.db'}"),
             database_identity(f"sqlite+pysqlite:///{db}?timeout=5")}
    assert len(names) == 1 and names.pop().startswith("sqlite:")
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    assert database_identity(f"sqlite:///{other}") != database_identity(f"sqlite:///{db}")


def test_a_file_that_is_not_there_yet_is_named_by_its_real_path(tmp_path: Path) -> None:
    assert database_identity(f"sqlite:///{tmp_path}/new.db") == (
        f"sqlite:{os.path.realpath(tmp_path / 'new.db')}")


def test_a_server_database_is_named_by_host_port_and_name_not_by_who_connects() -> None:
    a = database_identity("postgresql+psycopg://alice:secret@db.example:5432/cron")
    assert a == "postgresql:db.example:5432:cron"
    assert database_identity("postgresql://bob@db.example/cron") == a  # (5432: the default)
    assert "secret" not in a
    assert database_identity("postgresql://alice@db.example:5432/other") != a
    assert database_identity("postgresql://alice@db.example:5433/cron") != a
    assert database_identity("postgresql:///cron?host=/run/postgresql") == (
        "postgresql:/run/postgresql:5432:cron")


def test_in_memory_has_no_identity_and_no_scope() -> None:
    assert database_identity("none") == "" and database_identity("sqlite://") == ""
    assert scope_of("") == ""
    assert len(scope_of("postgresql:db.example:5432:cron")) == 16
