"""Global options shared by every command, kept on the typer context."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import typer


@dataclass(frozen=True)
class GlobalOptions:
    config: Path | None = None
    database: str | None = None
    jobs_dir: Path | None = None
    verbose: int = 0
    quiet: bool = False
    no_color: bool = False

    @property
    def color(self) -> bool:
        return not self.no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()


def global_options(ctx: typer.Context) -> GlobalOptions:
    """The options given before the subcommand (defaults when none were given)."""
    root = ctx.find_root()
    obj = root.obj
    return obj if isinstance(obj, GlobalOptions) else GlobalOptions()
