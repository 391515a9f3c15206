"""``cronctl why JOB AT``: what became of the occurrence planned at (or nearest before)
``AT`` — ran, running, pending, skipped (why), missed (by the misfire policy), still to
come, or not a planned instant (disabled, no match, a DST gap the job skips)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import complete_job_ids, iso_z, open_reader
from cronctl.views.why import decide, why_document

if TYPE_CHECKING:
    pass

def why(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(
        metavar="JOB", help="The job.", autocompletion=complete_job_ids)],
    at: Annotated[str, typer.Argument(
        metavar="AT", help="The instant: ISO 8601 (without an offset: the job's local time) "
        "or relative (2h = two hours ago). The occurrence planned at AT, or the nearest "
        "one before it, is explained.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """What became of one occurrence: ran, skipped (why), missed, or never planned."""
    from cronctl.jobs.loader import find_job

    options = global_options(ctx)
    now = datetime.now(UTC)
    config, store = open_reader(options)
    try:
        job = find_job(config.job_settings, job_id, now=now)
        verdict, executions = decide(job, at, store, now)
    finally:
        if store is not None:
            store.close()
    doc = why_document(job, verdict, executions)
    planned = verdict.scheduled_at
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
        return
    when = "-" if planned is None else iso_z(planned)
    typer.echo(f"{job.id} @ {when}: {verdict.outcome.value}"
               + (f" ({verdict.reason})" if verdict.reason else ""))
    typer.echo(f"  {verdict.detail}")
    if job.cron_written is not None:
        typer.echo(f"  schedule: {job.cron_written} = {job.schedule_text} (H for {job.id})")
    for e in executions:
        typer.echo(f"  execution {e.id}: attempt {e.attempt} {e.status.value} on {e.node_id}"
                   + (f": {e.error}" if e.error else ""))


def register(app: typer.Typer) -> None:
    app.command("why")(why)
