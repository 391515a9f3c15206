"""``GlobalOptions``: what was given before the subcommand (``--config``, ``--database``,
``--jobs-dir``, verbosity, colour).

A plain frozen dataclass with no CLI framework in it, so :mod:`cronctl.config` can take
one without importing :mod:`cronctl.cli`; ``cronctl.cli.options`` keeps it on the typer
context.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GlobalOptions:
    config: Path | None = None
    database: str | None = None
    jobs_dir: Path | None = None
    verbose: int = 0
    quiet: bool = False
    no_color: bool = False
    allow_insecure: bool = False  # root loads files others can write (cronctl.trust)

    @property
    def color(self) -> bool:
        return not self.no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()
