"""``cronctl man [cronctl|cronctl.toml]``: the man pages of this installation.

After ``pip install`` into a venv the pages are under the venv's ``share/man``, where
``man`` finds them only with the venv on PATH (and systemd's ``man:`` links not at all).
This prints them wherever they are: formatted by ``man -l`` (paged on a terminal, plain
text into a pipe: ``cronctl man | head`` printed raw troff), as plain text where there is
no ``man``, the roff source with ``--source``, or the file's path with ``--path``."""

from __future__ import annotations

import re
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
    source: Annotated[bool, typer.Option("--source", help="Print the roff source.")] = False,
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
    text = found.read_text(encoding="utf-8")
    if source:
        typer.echo(text, nl=False)
        return
    viewer = shutil.which("man")
    if viewer is not None:
        sys.stdout.flush()
        code = subprocess.call([viewer, "-l", str(found)])
        if code == 0 or sys.stdout.isatty():
            raise SystemExit(code)
    typer.echo(plain_text(text), nl=False)


# The roff escapes the pages use, as plain text.
_ESCAPES = {"\\-": "-", "\\e": "\\", "\\&": "", "\\(em": "--", "\\(mu": "x",
            "\\(aq": "'", "\\ ": " ", "\\~": " ", "\\|": "", "\\^": ""}
_FONT = re.compile(r"\\f[BIRP]|\\f\(..")
_QUOTED = re.compile(r'"([^"]*)"|(\S+)')


def plain_text(roff: str) -> str:
    """The page as plain text for a machine without ``man``: headings flush left, the
    rest indented, requests and font changes gone (not a formatter: lines stay as the
    source breaks them)."""
    out: list[str] = []
    indent = "       "
    for line in roff.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        request, _, rest = line.partition(" ")
        if request in (".SH", ".SS"):
            out += ["", ("" if request == ".SH" else "   ") + _inline(rest).strip('"')]
        elif request in (".TP", ".PP", ".LP", ".P", ".IP", ".sp"):
            out.append("")
        elif request in (".B", ".I"):
            out.append(indent + _inline(rest.replace('"', "")))
        elif request in (".BI", ".IB", ".BR", ".RB", ".IR", ".RI"):  # alternating fonts
            words = [m.group(1) if m.group(1) is not None else m.group(2)
                     for m in _QUOTED.finditer(rest)]
            out.append(indent + _inline("".join(words)))
        elif request == ".TH" or (line.startswith(".") and len(request) <= 3):
            continue  # .TH, .nf, .fi, .br, .RS, .RE: layout only
        else:
            out.append(indent + _inline(line))
    return "\n".join(out).lstrip("\n") + "\n"


def _inline(text: str) -> str:
    text = _FONT.sub("", text)
    for escape, plain in _ESCAPES.items():
        text = text.replace(escape, plain)
    return text


def register(app: typer.Typer) -> None:
    app.command("man")(man)
