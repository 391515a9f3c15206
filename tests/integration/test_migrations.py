"""Migrations against the tables, concurrent upgrades, and the faults that must end in one
clear StoreError (password redacted, nothing written)."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from cronctl.errors import StoreError
from cronctl.store import SchemaMismatch, StoreUnavailable, open_store
from cronctl.store import migrate as mig
from cronctl.store.engine import make_engine
from cronctl.store.schema import HEAD, KNOWN_REVISIONS
from cronctl.store.tables import metadata

SECRET = "hunter2-Secret"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return str(request.getfixturevalue("postgres_url"))


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return set(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()


def _revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return mig.current_revision(conn)
    finally:
        engine.dispose()


def test_known_revisions_match_the_scripts() -> None:
    scripts = ScriptDirectory.from_config(mig.alembic_config())
    oldest_first = [s.revision for s in reversed(list(scripts.walk_revisions()))]
    assert tuple(oldest_first) == KNOWN_REVISIONS
    assert mig.script_head() == HEAD
    assert mig.migrations_dir().name in ("migrations", "_migrations")


def test_migrations_build_exactly_the_tables(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        result = mig.upgrade(engine, db_url)
        assert (result.before, result.after, result.changed) == (None, HEAD, True)
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(ctx, metadata) == []
        again = mig.upgrade(engine, db_url)
        assert (again.before, again.after, again.changed) == (HEAD, HEAD, False)
        # Downgrade to nothing and back: the scripts are complete in both directions.
        with engine.begin() as conn:
            command.downgrade(mig.alembic_config(conn), "base")
        assert _tables(db_url) <= {"alembic_version"}
        assert mig.upgrade(engine, db_url).after == HEAD
    finally:
        engine.dispose()


def test_first_seen_of_rows_older_than_0011_is_the_epoch(db_url: str) -> None:
    """A job scheduled before revision 0011 has no known first scheduling: the epoch, so
    `why` and `replay` keep treating its whole past as planned (issue 24)."""
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            command.upgrade(mig.alembic_config(conn), "0010")
            conn.execute(sa.text("INSERT INTO job_schedules (job_id) VALUES ('old')"))
        mig.upgrade(engine, db_url)
    finally:
        engine.dispose()
    store = open_store(db_url, node_id="n1")
    try:
        state = store.get_schedule("old")
        assert state is not None and state.first_seen == datetime(1970, 1, 1, tzinfo=UTC)
    finally:
        store.close()


def test_concurrent_auto_migrations_are_safe(db_url: str) -> None:
    barrier = threading.Barrier(4)
    outcomes: list[bool] = []
    errors: list[BaseException] = []

    def start() -> None:
        engine = make_engine(db_url)
        try:
            barrier.wait()
            outcomes.append(mig.upgrade(engine, db_url).changed)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert sorted(outcomes) == [False, False, False, True]
    assert _revision(db_url) == HEAD


def test_open_store_migrates_by_default_and_then_skips_alembic(db_url: str) -> None:
    store = open_store(db_url, node_id="n1")
    store.close()
    assert _revision(db_url) == HEAD
    store = open_store(db_url, node_id="n1", auto_migrate=False)
    store.close()


def test_missing_tables_with_auto_migrate_off(db_url: str) -> None:
    with pytest.raises(SchemaMismatch, match=r"no cronctl tables.*run `cronctl db upgrade`"):
        open_store(db_url, node_id="n1", auto_migrate=False)
    assert not {t.name for t in metadata.sorted_tables} & _tables(db_url)


def test_newer_revision_is_refused_before_anything_is_written(db_url: str) -> None:
    open_store(db_url, node_id="n1").close()
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
        message = rf"at revision 9999, newer than this cronctl \(head {HEAD}\): upgrade cronctl"
        with pytest.raises(SchemaMismatch, match=message):
            open_store(db_url, node_id="n1")
        with pytest.raises(SchemaMismatch, match=message):
            mig.upgrade(engine, db_url)
        assert _revision(db_url) == "9999"
    finally:
        engine.dispose()


# --- SQLite faults ---------------------------------------------------------------------


def test_corrupt_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    garbage = bytes(range(256)) * 16
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match=r"state\.db is not a valid SQLite database.*backup"):
        open_store(f"sqlite:///{path}", node_id="n1")
    assert path.read_bytes() == garbage


def _read_only_url(path: Path) -> str:
    """Root ignores permission bits, so there the read-only open mode stands in for them."""
    if os.geteuid() == 0:
        return f"sqlite:///file:{path}?mode=ro&uri=true"
    path.chmod(0o444)
    path.parent.chmod(0o555)
    return f"sqlite:///{path}"


def test_read_only_sqlite_file(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    empty = folder / "empty.db"
    empty.write_bytes(b"")
    migrated = folder / "migrated.db"
    open_store(f"sqlite:///{migrated}", node_id="n1").close()
    for suffix in ("-wal", "-shm"):
        Path(f"{migrated}{suffix}").unlink(missing_ok=True)
    try:
        with pytest.raises(StoreError, match=r"empty\.db.* is read-only.*writable"):
            open_store(_read_only_url(empty), node_id="n1")
        assert empty.read_bytes() == b""
        # An up-to-date database opens read-only (history, logs); a write says why it fails.
        store = open_store(_read_only_url(migrated), node_id="n1")
        try:
            assert store.list_executions() == []
            with pytest.raises(StoreError, match="read-only"):
                store.set_paused("job", True)
        finally:
            store.close()
    finally:
        folder.chmod(0o755)


def test_sqlite_directory_missing(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot open database .*directory exists"):
        open_store(f"sqlite:///{tmp_path / 'nope' / 'state.db'}", node_id="n1")


# --- PostgreSQL faults -----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://cronctl:{SECRET}@127.0.0.1:{_free_port()}/cron"
    with pytest.raises(StoreUnavailable) as info:
        open_store(url, node_id="n1")
    message = str(info.value)
    assert "cronctl:***@127.0.0.1" in message and "server is running" in message
    assert SECRET not in message and info.value.__cause__ is None


class FakeAuthServer:
    """Speaks just enough of the PostgreSQL protocol to ask for a password and reject it
    (the test server trusts every local connection, so it never asks)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = int(self.sock.getsockname()[1])
        self.passwords: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):
                self._session(conn)

    @staticmethod
    def _recv(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _session(self, conn: socket.socket) -> None:
        while True:  # SSL / GSS encryption requests first: refuse them, then the startup
            (length,) = struct.unpack("!i", self._recv(conn, 4))
            body = self._recv(conn, length - 4)
            if struct.unpack("!i", body[:4])[0] in (80877103, 80877104):
                conn.sendall(b"N")
                continue
            break
        conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        kind = self._recv(conn, 1)
        (length,) = struct.unpack("!i", self._recv(conn, 4))
        payload = self._recv(conn, length - 4)
        if kind == b"p":
            self.passwords.append(payload.rstrip(b"\0"))
        fields = b"".join(
            code + text + b"\0"
            for code, text in (
                (b"S", b"FATAL"),
                (b"V", b"FATAL"),
                (b"C", b"28P01"),
                (b"M", b'password authentication failed for user "cronctl"'),
            )
        )
        conn.sendall(b"E" + struct.pack("!i", len(fields) + 5) + fields + b"\0")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def auth_server() -> Iterator[FakeAuthServer]:
    server = FakeAuthServer()
    yield server
    server.close()


def test_wrong_password(auth_server: FakeAuthServer) -> None:
    url = f"postgresql+psycopg://cronctl:{SECRET}@127.0.0.1:{auth_server.port}/cron"
    with pytest.raises(StoreError) as info:
        open_store(url, node_id="n1")
    message = str(info.value)
    assert "cannot log in to database" in message and "check the user name and password" in message
    assert f"cronctl:***@127.0.0.1:{auth_server.port}/cron" in message
    assert SECRET not in message and info.value.__cause__ is None
    assert auth_server.passwords and auth_server.passwords[0] == SECRET.encode()
