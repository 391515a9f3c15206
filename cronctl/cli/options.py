"""The global options on the typer context (the dataclass lives in :mod:`cronctl.options`)."""

from __future__ import annotations

import typer

from cronctl.options import GlobalOptions


def global_options(ctx: typer.Context) -> GlobalOptions:
    """The options given before the subcommand (defaults when none were given)."""
    root = ctx.find_root()
    obj = root.obj
    return obj if isinstance(obj, GlobalOptions) else GlobalOptions()
