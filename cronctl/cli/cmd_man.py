"""``cronctl man [cronctl|cronctl.toml]``: the man pages of this installation.

After ``pip install`` into a venv the pages are under the venv's ``share/man``, where
``man`` finds them only with the venv on PATH (and systemd's ``man:`` links not at all).
This prints them wherever they are: formatted by ``man`` on a terminal, the roff source
otherwise (``cronctl man | man -l -``), or the file's path with ``--path``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Annotated

import typer

from cronctl.cli.shared import MAN_PAGES, man_page
from cronctl.errors import CronctlError, UsageError


def man(
    page: Annotated[str, typer.Argument(
        metavar="[PAGE]", help="cronctl (the commands) or cronctl.toml (the file formats).")
    ] = "cronctl",
    path: Annotated[bool, typer.Option("--path", help="Print the page's file name only.")
                    ] = False,
) -> None:
    """Show a man page of this installation (also outside MANPATH)."""
    if page not in MAN_PAGES:
        raise UsageError(f"PAGE: {page!r} is no cronctl man page; one of "
                         f"{', '.join(MAN_PAGES)}")
    found = man_page(page)
    if found is None:
        raise CronctlError(f"the {page} man page is not installed with this cronctl")
    if path:
        typer.echo(str(found))
        return
    viewer = shutil.which("man")
    if viewer is not None and sys.stdout.isatty():
        raise SystemExit(subprocess.call([viewer, "-l", str(found)]))
    typer.echo(found.read_text(encoding="utf-8"), nl=False)


def register(app: typer.Typer) -> None:
    app.command("man")(man)
