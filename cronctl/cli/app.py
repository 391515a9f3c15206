"""The ``cronctl`` command. Each subcommand lives in its own ``cmd_*`` module with a
``register(app)`` function; heavy imports (SQLAlchemy, alembic, psycopg) stay inside the
command bodies so that ``next``, ``validate`` and ``list`` start fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cronctl.cli.options import GlobalOptions
from cronctl.errors import CronctlError

app = typer.Typer(
    name="cronctl",
    help="A cron scheduler you run as a service.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _globals(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Config file (else $CRONCTL_CONFIG, ./cronctl.toml, "
                     "/etc/cronctl/cronctl.toml)."),
    ] = None,
    database: Annotated[
        str | None, typer.Option("--database", help="Database URL, or 'none' for memory.")
    ] = None,
    jobs_dir: Annotated[
        Path | None, typer.Option("--jobs-dir", help="Directory of *.toml job files.")
    ] = None,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More output.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Less output.")] = False,
    no_color: Annotated[bool, typer.Option("--no-color", help="No colours.")] = False,
) -> None:
    ctx.obj = GlobalOptions(
        config=config,
        database=database,
        jobs_dir=jobs_dir,
        verbose=verbose,
        quiet=quiet,
        no_color=no_color,
    )


def _register_commands() -> None:
    # Each module adds its commands; the import list is the command list.
    from cronctl.cli import (
        cmd_cancel,
        cmd_db,
        cmd_history,
        cmd_init,
        cmd_list,
        cmd_logs,
        cmd_next,
        cmd_run,
        cmd_systemd,
        cmd_trigger,
        cmd_validate,
    )

    for module in (cmd_next, cmd_systemd, cmd_db, cmd_validate, cmd_list, cmd_init,
                   cmd_history, cmd_logs, cmd_cancel, cmd_run, cmd_trigger):
        module.register(app)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning user errors into one line and an exit code."""
    _register_commands()
    try:
        app(args=argv, standalone_mode=True)
    except CronctlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
