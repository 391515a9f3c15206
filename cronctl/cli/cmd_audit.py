"""``cronctl audit [--since T] [--limit N] [--json]``: who did what through the HTTP API
(``cronctl serve``), newest first: one row per POST, with the token's name (never the
token), the action and its target, the HTTP status and the result."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from cronctl import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import iso_z, open_state
from cronctl.cli.tables import WIDE_HELP, Column, Output, Row, Table
from cronctl.escaping import printable
from cronctl.views.audit import audit_document

COLUMNS = (
    Column("AT"),
    Column("WHO", shrink=True),
    Column("ACTION"),
    Column("TARGET", shrink=True, priority=2),
    Column("STATUS", priority=3),
    Column("RESULT", shrink=True, priority=1, floor=16),
    Column("CLIENT", priority=4),
)


def audit(
    ctx: typer.Context,
    since: Annotated[str | None, typer.Option(
        "--since", help="At or after T: ISO 8601 or relative (2h, 3d).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", parser=argtypes.count("--limit"),
                                       help="At most N rows.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help=WIDE_HELP)] = False,
) -> None:
    """Who did what through the HTTP API, newest first."""
    options = global_options(ctx)
    now = datetime.now(UTC)
    since_at = argtypes.parse_time(since, now, what="--since") if since is not None else None
    _, store = open_state(options)
    try:
        records = store.list_audit(since=since_at, limit=limit) if store is not None else []
    finally:
        if store is not None:
            store.close()
    if as_json:
        typer.echo(json.dumps(audit_document(records), indent=2))
        return
    if not records:
        typer.echo("no API actions recorded")
        return
    rows = tuple(Row((
        iso_z(r.at), printable(r.actor), r.action, printable(r.target or "-"), str(r.status),
        printable(r.result), r.client or "-",
    )) for r in records)
    Output(color=options.color, wide=wide).table(Table(COLUMNS, rows))


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
