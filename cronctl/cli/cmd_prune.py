"""``cronctl prune [--dry-run] [--json]``: delete what ``[retention]`` no longer keeps, now.

The same pass as the one ``cronctl run`` makes every ``[retention] interval``, in the
same small transactions, so it is safe while schedulers run (a pass of theirs at the same
time deletes nothing twice). ``--dry-run`` counts and writes nothing. A SQLite file that
does not exist yet has nothing to prune (and is not created).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import open_state, require_database

if TYPE_CHECKING:
    from cronctl.store.base import PruneCounts


def prune(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Count what would be deleted; write nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Delete what [retention] no longer keeps, now."""
    from cronctl.config import load_config
    from cronctl.runtime.pruning import VACUUM_PAGES, VACUUM_SLACK, batch_for, policy_for
    from cronctl.store.base import PruneCounts

    options = global_options(ctx)
    config = load_config(options)
    require_database(config, "'cronctl prune'")
    _, store = open_state(options, missing_ok=True)  # an empty database: nothing to prune
    counts, freed = PruneCounts(), 0
    if store is not None:
        try:
            counts = store.prune(policy_for(config.retention, datetime.now(UTC)),
                                 batch=batch_for(store),
                                 dry_run=dry_run)
            while not dry_run:
                pages = store.reclaim_space(max_pages=VACUUM_PAGES, keep_fraction=VACUUM_SLACK)
                freed += pages
                if pages < VACUUM_PAGES:
                    break
        finally:
            store.close()
    if as_json:
        typer.echo(json.dumps({"dry_run": dry_run, "executions": counts.executions,
                               "skipped": counts.skipped, "log_lines": counts.log_lines,
                               "trigger_requests": counts.trigger_requests}))
        return
    typer.echo(_text(counts, dry_run, freed))


def _text(counts: PruneCounts, dry_run: bool, freed_pages: int) -> str:
    verb = "would delete" if dry_run else "deleted"
    line = (f"{verb}: {counts.executions:,} finished executions with {counts.log_lines:,} "
            f"log lines, {counts.skipped:,} skip records, {counts.trigger_requests:,} "
            "done trigger requests")
    if freed_pages:
        line += f"; gave {freed_pages:,} free pages back to the file system"
    return line


def register(app: typer.Typer) -> None:
    app.command("prune")(prune)
