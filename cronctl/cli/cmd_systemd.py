"""``cronctl systemd-unit``: print a unit file for this installation."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from cronctl.cli.options import global_options

UNIT_TEMPLATE = """\
[Unit]
Description=cronctl scheduler
Documentation=man:cronctl(1) man:cronctl.toml(5)
Wants=network-online.target
After=network-online.target{after}

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start}
ExecReload=/bin/kill -HUP $MAINPID
{user}WorkingDirectory={workdir}
StateDirectory=cronctl
Environment=PYTHONUNBUFFERED=1
# cronctl lets running executions finish for shutdown_timeout, then cancels them.
KillSignal=SIGTERM
KillMode=mixed
TimeoutStopSec={stop_timeout}
WatchdogSec=30
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
"""


def render_unit(
    executable: str,
    config: Path | None,
    user: str | None,
    workdir: Path,
    stop_timeout: int,
    after: str = "",
) -> str:
    args = [executable]
    if config is not None:
        args += ["--config", str(config)]
    args.append("run")
    return UNIT_TEMPLATE.format(
        after=f" {after}" if after else "",
        exec_start=" ".join(args),
        user=f"User={user}\n" if user else "",
        workdir=workdir,
        stop_timeout=stop_timeout,
    )


def _executable() -> str:
    found = shutil.which("cronctl")
    if found:
        return os.path.abspath(found)
    # Running as `python -m cronctl` from a virtualenv: use its interpreter.
    return f"{sys.executable} -m cronctl"


def register(app: typer.Typer) -> None:
    @app.command("systemd-unit")
    def systemd_unit(
        ctx: typer.Context,
        user: Annotated[
            str | None, typer.Option("--user", help="Run the service as this user.")
        ] = None,
        postgres: Annotated[
            bool,
            typer.Option("--postgres", help="Order the unit after postgresql.service."),
        ] = False,
        stop_timeout: Annotated[
            int,
            typer.Option(
                "--stop-timeout",
                min=1,
                help="TimeoutStopSec; keep it above the config's shutdown_timeout.",
            ),
        ] = 45,
    ) -> None:
        """Print a systemd unit file (Type=notify) for this installation."""
        options = global_options(ctx)
        config = options.config.resolve() if options.config is not None else None
        workdir = config.parent if config is not None else Path("/var/lib/cronctl")
        typer.echo(
            render_unit(
                _executable(),
                config,
                user,
                workdir,
                stop_timeout,
                after="postgresql.service" if postgres else "",
            ),
            nl=False,
        )
