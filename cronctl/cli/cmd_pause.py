"""``cronctl pause JOB`` / ``cronctl resume JOB``: stop and restart firing, cluster-wide.

The flag lives on the job's schedule row in the state database, so it holds for every
node and survives restarts; running schedulers poll it (every 2 s). Pausing does not
cancel an execution that is already running, and explicit requests (``trigger``,
``replay``) still run a paused job: the operator asked for them.

Also holds :func:`open_for_writing`, which ``replay`` shares: unlike the read-only
commands, these two must create the SQLite file when nothing has run yet.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.errors import StoreError
from cronctl.options import GlobalOptions

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.store.base import Store


def require_database(config: Config, what: str) -> None:
    """``database = "none"`` has no shared state to write to: :class:`StoreError`
    (exit 1) saying what to set."""
    if config.in_memory:
        raise StoreError(
            f"{what} needs a state database, and the database is 'none' (state in the "
            "scheduler's memory only); set [scheduler] database (or --database) to a SQLite "
            "or PostgreSQL URL"
        )


def open_for_writing(config: Config, what: str) -> Store:
    """The config's store, created and migrated if need be (see :func:`require_database`
    for ``database = "none"``)."""
    from cronctl.config import redact_url

    require_database(config, what)
    from cronctl.store import open_store

    try:
        store = open_store(config.database, node_id=config.node_id,
                           auto_migrate=config.auto_migrate)
    except StoreError:
        raise
    except Exception as exc:  # a driver error the store did not wrap
        raise StoreError(f"cannot open {redact_url(config.database)}: {exc}") from None
    return store


def _set_paused(options: GlobalOptions, job: str, paused: bool, as_json: bool) -> None:
    from cronctl.cli.cmd_history import require_job_defined
    from cronctl.config import load_config

    config = load_config(options)
    # A job that is defined but invalid can still be paused (and usually should be).
    require_job_defined(config, job)  # NotFoundError: exit 3, with a did-you-mean
    store = open_for_writing(config, f"'cronctl {'pause' if paused else 'resume'}'")
    try:
        state = store.get_schedule(job)
        was_paused = state is not None and state.paused
        if was_paused != paused:
            store.set_paused(job, paused)
    finally:
        store.close()
    changed = was_paused != paused
    if as_json:
        typer.echo(json.dumps({"job": job, "paused": paused, "changed": changed}))
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
    job: Annotated[str, typer.Argument(help="The job to pause.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Stop firing JOB on every node until 'cronctl resume JOB'."""
    _set_paused(global_options(ctx), job, True, as_json)


def resume(
    ctx: typer.Context,
    job: Annotated[str, typer.Argument(help="The job to resume.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Fire JOB again on every node (after 'cronctl pause JOB')."""
    _set_paused(global_options(ctx), job, False, as_json)


def register(app: typer.Typer) -> None:
    app.command("pause")(pause)
    app.command("resume")(resume)
