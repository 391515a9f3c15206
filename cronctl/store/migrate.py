"""Schema revisions: read the current one, check it, upgrade under a cluster-wide lock.

alembic is imported only when an upgrade actually runs (or for ``db current``'s script
listing); a store that is already at the head opens with one ``SELECT``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cronctl.store.engine import translated, writer
from cronctl.store.records import SchemaMismatch
from cronctl.store.schema import HEAD, KNOWN_REVISIONS
from cronctl.store.urls import redact

if TYPE_CHECKING:
    from alembic.config import Config

# pg_advisory_xact_lock key: "cronctl" in ASCII, so other applications are unlikely to
# collide with it.
PG_MIGRATION_LOCK = 0x63726F6E63746C


def migrations_dir() -> Path:
    """The alembic script directory: ``cronctl/_migrations`` inside an installed wheel,
    else the top-level ``migrations/`` of a development checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_migrations", package.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise SchemaMismatch(  # pragma: no cover - a broken installation
        f"cronctl's migration scripts are missing (looked in {package / '_migrations'}): "
        "reinstall cronctl"
    )


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def current_revision(conn: Connection) -> str | None:
    """The revision stamped in ``alembic_version``; None for a database without it."""
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    if not rows:
        return None
    if len(rows) > 1:  # several heads: only a foreign tool would do that
        raise SchemaMismatch(f"alembic_version holds several revisions: {sorted(rows)}")
    return str(rows[0])


def newer_message(url: str, revision: str) -> str:
    return (
        f"database {redact(url)} is at revision {revision}, newer than this cronctl "
        f"(head {HEAD}): upgrade cronctl"
    )


def check_known(url: str, revision: str | None) -> None:
    if revision is not None and revision not in KNOWN_REVISIONS:
        raise SchemaMismatch(newer_message(url, revision))


@dataclass(frozen=True)
class UpgradeResult:
    before: str | None
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def upgrade(engine: Engine, url: str) -> UpgradeResult:
    """Upgrade to the head. Safe when several processes or nodes do it at once: the whole
    upgrade runs in one transaction that first takes a lock (PostgreSQL advisory lock,
    SQLite ``BEGIN IMMEDIATE``); whoever comes second finds the head and does nothing.
    A database at a revision newer than this cronctl is refused before anything is
    written."""
    with translated(url), writer(engine).connect() as conn, conn.begin():
        if conn.dialect.name == "postgresql":
            # A migration may wait for another node's and build indexes on a large table:
            # the sessions' statement_timeout (cronctl.store.pgsession) does not apply.
            conn.exec_driver_sql("SET LOCAL statement_timeout = 0")
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(PG_MIGRATION_LOCK)))
        before = current_revision(conn)
        check_known(url, before)
        if before != HEAD:
            from alembic import command

            command.upgrade(alembic_config(conn), "head")
        after = current_revision(conn)
    assert after is not None
    return UpgradeResult(before, after)


def ensure_schema(engine: Engine, url: str, *, auto_migrate: bool) -> None:
    """Make sure the database is at this cronctl's head, upgrading if allowed."""
    with translated(url), engine.connect() as conn:
        revision = current_revision(conn)
    if revision == HEAD:
        return
    check_known(url, revision)
    if not auto_migrate:
        if revision is None:
            raise SchemaMismatch(
                f"database {redact(url)} has no cronctl tables and auto_migrate is off: "
                "run `cronctl db upgrade`"
            )
        raise SchemaMismatch(
            f"database {redact(url)} is at revision {revision}, this cronctl needs {HEAD} "
            "and auto_migrate is off: run `cronctl db upgrade`"
        )
    upgrade(engine, url)


def script_head() -> str:
    """The head according to the migration scripts (tests compare it with HEAD)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


__all__ = [
    "UpgradeResult",
    "alembic_config",
    "check_known",
    "current_revision",
    "ensure_schema",
    "migrations_dir",
    "script_head",
    "upgrade",
]
