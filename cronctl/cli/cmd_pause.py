"""``cronctl pause JOB`` / ``cronctl resume JOB``: stop and restart firing, cluster-wide.

The flag lives on the job's schedule row in the state database, so it holds for every
node and survives restarts; running schedulers poll it (every 2 s). Pausing does not
cancel an execution that is already running, and explicit requests (``trigger``,
``replay``) still run a paused job: the operator asked for them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    JOB_OPTION_HELP,
    complete_job_ids,
    one_job,
    open_for_writing,
    require_job_defined,
)
from cronctl.views.actions import set_paused

if TYPE_CHECKING:
    from cronctl.options import GlobalOptions


def _set_paused(options: GlobalOptions, job: str, paused: bool, as_json: bool) -> None:
    from cronctl.config import load_config

    config = load_config(options)
    # A job that is defined but invalid can still be paused (and usually should be).
    require_job_defined(config, job)  # NotFoundError: exit 3, with a did-you-mean
    store = open_for_writing(config, f"'cronctl {'pause' if paused else 'resume'}'")
    try:
        doc = set_paused(store, job, paused)
    finally:
        store.close()
    changed = doc["changed"]
    if as_json:
        typer.echo(json.dumps(doc))
    elif not changed:
        typer.echo(f"job {job} is already {'paused' if paused else 'running (not paused)'}; "
                   "nothing changed")
    elif paused:
        typer.echo(f"paused: job {job}, on every node (running schedulers stop firing it "
                   "within a few seconds; an execution already running is not cancelled)")
    else:
        typer.echo(f"resumed: job {job} fires again from its next planned instant (to run "
                   "fires skipped while paused, see 'cronctl replay')")


def pause(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(
        metavar="JOB", help="The job to pause.", autocompletion=complete_job_ids)] = None,
    job_option: Annotated[str | None, typer.Option(
        "--job", help=JOB_OPTION_HELP, autocompletion=complete_job_ids)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Stop firing JOB on every node until 'cronctl resume JOB'."""
    _set_paused(global_options(ctx), one_job(job, job_option), True, as_json)


def resume(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(
        metavar="JOB", help="The job to resume.", autocompletion=complete_job_ids)] = None,
    job_option: Annotated[str | None, typer.Option(
        "--job", help=JOB_OPTION_HELP, autocompletion=complete_job_ids)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Fire JOB again on every node (after 'cronctl pause JOB')."""
    _set_paused(global_options(ctx), one_job(job, job_option), False, as_json)


def register(app: typer.Typer) -> None:
    app.command("pause")(pause)
    app.command("resume")(resume)
