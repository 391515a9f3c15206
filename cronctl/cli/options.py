"""The global options on the typer context (the dataclass lives in :mod:`cronctl.options`)."""

from __future__ import annotations

import typer

from cronctl.options import GlobalOptions


def global_options(ctx: typer.Context) -> GlobalOptions:
    """The options given before the subcommand (defaults when none were given).
    ``--allow-insecure`` takes effect here, with its one WARNING (as root)."""
    root = ctx.find_root()
    obj = root.obj
    options = obj if isinstance(obj, GlobalOptions) else GlobalOptions()
    if options.allow_insecure:
        from cronctl import trust

        if trust.checking():
            typer.echo("warning: --allow-insecure: files that users other than root can "
                       "write are loaded and run as root", err=True)
        trust.permit_insecure()
    return options
