"""``cronctl db upgrade`` and ``cronctl db current``: the schema of the state database.

SQLAlchemy and alembic are imported inside the command bodies only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.errors import StoreError

db_app = typer.Typer(
    name="db",
    help="Database schema: upgrade it, or show its revision.",
    no_args_is_help=True,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document.")]


def _database(ctx: typer.Context) -> str:
    from cronctl.config import load_config

    url = load_config(global_options(ctx)).database
    if url.strip().lower() == "none":
        raise StoreError(
            "the database is 'none' (state kept in memory): there is no schema; set "
            "[scheduler] database or --database to a SQLite or PostgreSQL URL"
        )
    return url


def _sqlite_file_missing(url: str) -> bool:
    """A SQLite URL whose file does not exist yet (``db current`` must not create it)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return False
    return not Path(parsed.database).exists()


@db_app.command("upgrade")
def upgrade(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Create or upgrade cronctl's tables to this version's schema (safe to repeat, and
    safe while schedulers run)."""
    from cronctl.store.engine import make_engine, normalize_url
    from cronctl.store.migrate import upgrade as run_upgrade
    from cronctl.store.schema import HEAD
    from cronctl.store.urls import redact

    url = normalize_url(_database(ctx))
    engine = make_engine(url)
    try:
        result = run_upgrade(engine, url)
    finally:
        engine.dispose()
    if as_json:
        doc = {
            "database": redact(url),
            "before": result.before,
            "current": result.after,
            "head": HEAD,
            "changed": result.changed,
        }
        typer.echo(json.dumps(doc))
    elif result.changed:
        typer.echo(
            f"upgraded {redact(url)} from {result.before or 'an empty schema'} to {result.after}"
        )
    else:
        typer.echo(f"{redact(url)} is already at revision {result.after} (head)")


@db_app.command("current")
def current(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Show the database's schema revision and this cronctl's head."""
    from cronctl.store.engine import make_engine, normalize_url, translated
    from cronctl.store.migrate import current_revision
    from cronctl.store.schema import HEAD, KNOWN_REVISIONS
    from cronctl.store.urls import redact

    url = normalize_url(_database(ctx))
    revision: str | None = None
    if not _sqlite_file_missing(url):
        engine = make_engine(url)
        try:
            with translated(url), engine.connect() as conn:
                revision = current_revision(conn)
        finally:
            engine.dispose()
    known = revision is None or revision in KNOWN_REVISIONS
    if as_json:
        doc = {
            "database": redact(url),
            "current": revision,
            "head": HEAD,
            "up_to_date": revision == HEAD,
            "newer_than_cronctl": not known,
        }
        typer.echo(json.dumps(doc))
        return
    if revision == HEAD:
        note = " (head)"
    elif revision is None:
        note = " (no cronctl schema: run `cronctl db upgrade`)"
    elif not known:
        note = " (newer than this cronctl: upgrade cronctl)"
    else:
        note = " (behind: run `cronctl db upgrade`)"
    typer.echo(f"database: {redact(url)}")
    typer.echo(f"current:  {revision or 'none'}{note}")
    typer.echo(f"head:     {HEAD}")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
