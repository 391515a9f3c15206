"""``cronctl serve [--listen ADDR]``: the HTTP API and the dashboard
(docs/behaviour.md#the-http-api). This module parses and calls :func:`cronctl.serve.run.serve`;
FastAPI, uvicorn and Jinja2 are imported only when the command runs."""

from __future__ import annotations

from typing import Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.errors import UsageError


def serve(
    ctx: typer.Context,
    listen: Annotated[str | None, typer.Option(
        "--listen", metavar="ADDR",
        help="host:port to listen on (default: [api] listen, else 127.0.0.1:8321); a bare "
             "port listens on loopback.")] = None,
) -> None:
    """Serve the HTTP API (/api/v1) and the dashboard (/) until interrupted."""
    from cronctl.cli.app import version
    from cronctl.config import parse_listen
    from cronctl.serve.run import serve as run_server

    address = None
    if listen is not None:
        try:
            address = parse_listen(listen)
        except ValueError as exc:
            raise UsageError(f"--listen: {exc}") from None
    try:
        run_server(global_options(ctx), address, version())
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
