"""``cronctl why JOB AT``: what became of the occurrence planned at (or nearest before)
``AT`` — ran, running, pending, skipped (why), missed (by the misfire policy), still to
come, or not a planned instant (disabled, no match, a DST gap the job skips)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    JOB_OPTION_HELP,
    complete_job_ids,
    fenced_note,
    iso_z,
    one_job,
    open_reader,
)
from cronctl.errors import UsageError
from cronctl.views.why import decide, why_document


def why(
    ctx: typer.Context,
    job_id: Annotated[str | None, typer.Argument(
        metavar="JOB", help="The job (or --job JOB, and then AT alone).",
        autocompletion=complete_job_ids)] = None,
    at: Annotated[str | None, typer.Argument(
        metavar="AT", help="The instant: ISO 8601 (without an offset: the job's local time), "
        "a time of day (09:15, 09:15:20: today in the job's zone) or relative (2h = two "
        "hours ago). The occurrence planned at AT, or the nearest one before it, is "
        "explained.")] = None,
    job_option: Annotated[str | None, typer.Option(
        "--job", help=JOB_OPTION_HELP, autocompletion=complete_job_ids)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """What became of one occurrence: ran, skipped (why), missed, or never planned."""
    from cronctl.jobs.loader import find_job

    options = global_options(ctx)
    if job_option is not None and at is None:  # `why --job JOB AT`: the one argument is AT
        job_id, at = None, job_id
    job_id = one_job(job_id, job_option)
    if at is None:
        raise UsageError("missing AT (the instant to explain: ISO 8601, 09:15, or 2h ago)")
    now = datetime.now(UTC)
    config, store = open_reader(options)
    try:
        job = find_job(config.job_settings, job_id, now=now, state_dir=config.state_dir)
        parents = {}
        if job.after:  # their max_attempts: whether a failed attempt is their last
            from cronctl.jobs.loader import load_jobs

            parents = {j.id: j for j in load_jobs(config.job_settings, now=now,
                                                  state_dir=config.state_dir).jobs}
        verdict, executions = decide(job, at, store, now, parents)
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
        late = fenced_note(e)
        if late is not None:
            typer.echo(f"    {late}")


def register(app: typer.Typer) -> None:
    # `why JOB -5m`: a time before now written with a minus is AT, not an unknown option
    # (click read it as "-5"); a real unknown option is still refused in `_instant`.
    app.command("why", context_settings={"ignore_unknown_options": True})(why)
