"""``cronctl token add NAME [--role read|operate]``: a new API token for ``cronctl
serve``, appended to ``[api] tokens_file`` (created with mode 0600) as its sha256 and
shown this once. A running server takes it at its next request."""

from __future__ import annotations

from typing import Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.errors import ConfigError, CronctlError

token_app = typer.Typer(
    name="token",
    help="API tokens for cronctl serve: add one to its tokens file (api.tokens_file).",
    no_args_is_help=True,
)


@token_app.command("add")
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="What the audit log calls it.")],
    role: Annotated[str, typer.Option(
        "--role", metavar="ROLE",
        help="read (see everything) or operate (also trigger, cancel, pause, replay).")
    ] = "read",
) -> None:
    """Add a new token to the tokens file (api.tokens_file) and print it once; the file
    keeps only its sha256."""
    from cronctl.apitokens import add_token
    from cronctl.config import load_config
    from cronctl.escaping import printable

    options = global_options(ctx)
    config = load_config(options)
    path = config.api.tokens_file
    if path is None:
        raise ConfigError("no [api] tokens_file in cronctl.toml: add 'tokens_file = \"tokens\"' "
                          "under [api] (a path relative to cronctl.toml), then run this again")
    try:
        token = add_token(path, name, role.strip().lower())
    except OSError as exc:
        raise CronctlError(f"cannot write {printable(str(path))}: "
                           f"{exc.strerror or exc}") from None
    typer.echo(printable(f"added token {name!r} ({role.strip().lower()}) to {path}; shown "
                         f"this once:"), err=True)
    typer.echo(token)


def register(app: typer.Typer) -> None:
    app.add_typer(token_app, name="token")
