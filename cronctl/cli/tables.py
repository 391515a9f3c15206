"""The one table renderer of ``list``, ``history`` and ``status``.

Three ways out, chosen by :class:`Output`:

- piped (stdout is not a terminal): plain aligned text, every column, every cell in its
  full form, one line per row. Scripts parse this; it does not depend on any width.
- a terminal: the table fits its width (``COLUMNS``, else the terminal's size). A cell
  may come in several forms, fullest first (a time as ISO 8601 UTC, then short local
  time, then relative). The table takes the fullest forms with which it fits once the
  shrinkable columns (ids, targets, errors) are shortened with ``…`` (at a word boundary
  where one is near), none below its floor; when no form fits, the least important
  column is dropped and the search starts again; a dim line names what was dropped. A
  row is never wrapped: one row, one line. Status words are never shortened (their
  columns do not shrink); only when the columns that are never dropped do not fit
  either is each line cropped at the width.
- a terminal with ``--wide``: every column in its full form, however long the lines.

Colour only on a terminal and without ``NO_COLOR``/``--no-color``; without it, not one
escape code is written. rich is imported only to print in colour.
"""

from __future__ import annotations

import shutil
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console

Cell = str | tuple[str, ...]
"""One cell: its text, or its forms, fullest first (every form on one line)."""

WIDE_HELP = ("Show every column in full, however wide the lines (on a terminal, tables "
             "fit its width: long cells end with '…', low-priority columns are left out).")
ELLIPSIS = "…"
SEPARATOR = "  "
STATUS_STYLES = {"skipped": "dim", "succeeded": "green", "failed": "red",
                 "dead_letter": "bold red", "abandoned": "yellow", "lost": "yellow",
                 "cancelled": "yellow", "running": "cyan", "pending": "dim"}
# A shortened cell ends next to one of these when that keeps at least half of the room:
# "connection refused…", not "connection refu…"; "nightly-backup…", not "nightly-bac…".
_BREAK_AFTER = frozenset(" -_./:,;=@")


@dataclass(frozen=True)
class Column:
    """How one column behaves when the table is too wide.

    ``shrink``: its cells may be shortened with ``…``, down to ``floor`` characters (or
    the header's width); otherwise they stay whole. ``priority``: 0 is never dropped;
    the highest number goes first. ``status``: cells are status words, coloured."""

    header: str
    shrink: bool = False
    priority: int = 0
    floor: int = 12
    status: bool = False
    # Ids are shortened in the middle: `reports.compact` and `reports-summary` differ at
    # the end, which `reports…` would hide (`repor…compact`, `repor…summary`).
    middle: bool = False


@dataclass(frozen=True)
class Row:
    cells: tuple[Cell, ...]
    style: str | None = None  # the whole row (e.g. "dim" for a disabled job)


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Layout:
    """What a table shows: the columns (indexes), each one's width and form."""

    shown: tuple[int, ...]
    widths: tuple[int, ...]
    forms: tuple[int, ...]
    dropped: tuple[str, ...]  # headers not shown


# --- text ------------------------------------------------------------------------------


def one_line(text: str) -> str:
    """Control characters (newlines too) written as ``\\n``, ``\\x1b``, ...: a cell never
    breaks its row nor moves the cursor."""
    from cronctl.escaping import printable

    return printable(text)


def _char_width(char: str) -> int:
    if char.isascii():
        return 1
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def text_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (wide East Asian characters take two)."""
    return len(text) if text.isascii() else sum(_char_width(c) for c in text)


def shorten(text: str, width: int, *, middle: bool = False) -> str:
    """``text`` in at most ``width`` columns: whole if it fits, else cut and ended with
    ``…``, at a word boundary when one keeps at least half of the room; ``middle``: the
    ``…`` replaces the middle, keeping the start and the end (ids)."""
    if text_width(text) <= width:
        return text
    if middle and text.isascii() and width >= 5:
        return _cut_middle(text, width)
    return _cut(text, width)


def _cut_middle(text: str, width: int) -> str:
    """``text`` (ASCII, too long) as its start, ``…`` and its end in ``width`` columns: at
    word boundaries when a start and an end that fit together have them (the longest such
    pair, the end preferred), else split by characters, the end the larger half."""
    room = width - 1
    heads = [i for i in range(1, len(text)) if text[i] in _BREAK_AFTER]
    tails = [j for j in range(1, len(text)) if text[j - 1] in _BREAK_AFTER]
    best: tuple[int, int] | None = None
    for j in tails:
        tail = len(text) - j
        fits = [i for i in heads if i + tail <= room and i < j - 1]
        if fits and (best is None or (fits[-1] + tail, tail) > (best[0] + len(text) - best[1],
                                                               len(text) - best[1])):
            best = (fits[-1], j)
    if best is not None and best[0] + len(text) - best[1] >= room // 2:
        return text[:best[0]] + ELLIPSIS + text[best[1]:]
    end = text[len(text) - (room - room * 2 // 5):].lstrip(" ,;:-_.=@")
    return text[:room - len(end)].rstrip(" ,;:-_.=@") + ELLIPSIS + end


def _cut(text: str, width: int) -> str:
    """``text`` cut to end with ``…`` within ``width`` columns, fitting or not."""
    if width <= 1:
        return ELLIPSIS[:max(width, 0)]
    room = width - 1
    fit = 0  # how many characters fit in ``room``
    used = 0
    for char in text:
        used += _char_width(char)
        if used > room:
            break
        fit += 1
    for cut in range(fit, max(fit // 2, 1) - 1, -1):
        if text[cut - 1] in _BREAK_AFTER or (cut < len(text) and text[cut] in _BREAK_AFTER):
            kept = text[:cut].rstrip(" ,;:-_.=@")
            if kept:
                return kept + ELLIPSIS
            break
    return text[:fit] + ELLIPSIS


def _form(cell: Cell, form: int) -> str:
    """Form ``form`` of ``cell`` (its shortest if it has fewer), on one line."""
    text = cell if isinstance(cell, str) else cell[min(form, len(cell) - 1)]
    return text if text.isprintable() else one_line(text)


# --- times -----------------------------------------------------------------------------


def local_time(t: datetime, zone: str | None, now: datetime, *, date: bool = True) -> str:
    """``t`` short: ``12-01 09:14:05``, with the year when it is not this year's, without
    the date when ``date`` is False; in ``zone`` (an IANA name; UTC if unknown), or in
    this machine's local time (``TZ``) when ``zone`` is None."""
    tz: tzinfo | None = None
    if zone is not None:
        from cronctl.cron import UnknownTimezoneError, load_zone

        try:
            tz = load_zone(zone)
        except UnknownTimezoneError:  # a job's zone was validated: a safety net only
            tz = UTC
    local = t.astimezone(tz)
    if not date:
        return local.strftime("%H:%M:%S")
    if local.year != now.astimezone(tz).year:
        return local.strftime("%Y-%m-%d %H:%M")
    return local.strftime("%m-%d %H:%M:%S")


def ago(t: datetime, now: datetime) -> str:
    """``3m ago``, ``just now``."""
    from cronctl.durations import format_duration

    delta = now - t
    if delta < timedelta(seconds=1):
        return "just now"
    return f"{format_duration(delta)} ago"


def until(t: datetime, now: datetime) -> str:
    """``in 3h 2m``."""
    from cronctl.durations import format_duration

    return f"in {format_duration(t - now)}"


# --- layout ----------------------------------------------------------------------------


def layout(table: Table, width: int | None) -> Layout:
    """Fit ``table`` in ``width`` columns (``None``: everything, in full)."""
    count = len(table.columns)
    depth = max((len(c) for row in table.rows for c in row.cells if not isinstance(c, str)),
                default=1)

    # Each form's widths when first asked for: a table shown in full (a pipe, --wide)
    # needs only the first form, and 100,000 rows make every pass over them count.
    naturals: dict[int, list[int]] = {}

    def natural(index: int, form: int) -> int:
        if form not in naturals:
            naturals[form] = [
                max([text_width(column.header),
                     *(text_width(_form(row.cells[i], form)) for row in table.rows)])
                for i, column in enumerate(table.columns)]
        return naturals[form][index]

    def floor(index: int, form: int) -> int:
        column = table.columns[index]
        full = natural(index, form)
        if not column.shrink:
            return full
        return min(full, max(column.floor, text_width(column.header)))

    shown = list(range(count))
    if width is None:
        return Layout(tuple(shown), tuple(natural(i, 0) for i in shown), (0,) * count, ())
    while True:
        gaps = len(SEPARATOR) * (len(shown) - 1)
        for form in range(depth):
            floors = [floor(i, form) for i in shown]
            if sum(floors) + gaps <= width:
                return _shrunk(table, shown, [natural(i, form) for i in shown], floors,
                               width - gaps, form)
        droppable = [i for i in shown if table.columns[i].priority > 0]
        if not droppable:  # what remains is cropped line by line
            return _shrunk(table, shown, floors, floors, width - gaps, depth - 1)
        shown.remove(max(droppable, key=lambda i: (table.columns[i].priority, i)))


def _shrunk(table: Table, shown: list[int], widths: list[int], floors: list[int],
            room: int, form: int) -> Layout:
    """``widths`` narrowed to ``room`` in all: the widest shrinkable column gives up one
    column at a time (of equals, the rightmost), none below its floor. A column whose
    cells were all cut shorter (at a word boundary) gives what it does not use to the
    others that were shortened, the more important first."""
    natural = list(widths)
    widths = list(widths)
    excess = sum(widths) - room
    while excess > 0:
        candidates = [k for k in range(len(shown)) if widths[k] > floors[k]]
        if not candidates:
            break
        k = max(candidates, key=lambda k: (widths[k], k))
        widths[k] -= 1
        excess -= 1
    widths = [_used(table, i, form, widths[k]) if widths[k] < natural[k] else widths[k]
              for k, i in enumerate(shown)]
    for _ in range(8):
        cut = sorted((k for k in range(len(shown)) if widths[k] < natural[k]),
                     key=lambda k: (table.columns[shown[k]].priority, widths[k], k))
        grew = False
        for k in cut:
            spare = room - sum(widths)
            if spare <= 0:
                break
            # an equal share first; all that is left if the next word needs more
            for more in dict.fromkeys((max(1, spare // len(cut)), spare)):
                width = _used(table, shown[k], form, widths[k] + more)
                if width > widths[k]:
                    widths[k], grew = width, True
                    break
        if not grew:
            break
    return Layout(tuple(shown), tuple(widths), tuple(form for _ in table.columns),
                  tuple(c.header for i, c in enumerate(table.columns) if i not in shown))


def _used(table: Table, index: int, form: int, width: int) -> int:
    """How wide column ``index`` really is when its cells are shortened to ``width``."""
    middle = table.columns[index].middle
    return max([text_width(table.columns[index].header),
                *(text_width(shorten(_form(row.cells[index], form), width, middle=middle))
                  for row in table.rows)])


Segment = tuple[str, str | None]  # text and its rich style


def lines(table: Table, fitted: Layout, width: int | None = None, indent: str = ""
          ) -> list[list[Segment]]:
    """The header and each row as styled segments, one line each; with ``width``, no
    line is longer (a table of unshrinkable columns is cropped with ``…``)."""
    out: list[list[Segment]] = []
    header = [(table.columns[i].header, "bold") for i in fitted.shown]
    out.append(_line(header, fitted.widths, width, indent))
    for row in table.rows:
        cells: list[Segment] = []
        for i in fitted.shown:
            column = table.columns[i]
            text = shorten(_form(row.cells[i], fitted.forms[i]), fitted.widths[len(cells)],
                           middle=column.middle)
            style = row.style
            if column.status:
                style = STATUS_STYLES.get(text.split(" ", 1)[0], style)
            cells.append((text, style))
        out.append(_line(cells, fitted.widths, width, indent))
    return out


def _line(cells: Sequence[Segment], widths: Sequence[int], width: int | None,
          indent: str) -> list[Segment]:
    segments: list[Segment] = [(indent, None)] if indent else []
    for k, ((text, style), column_width) in enumerate(zip(cells, widths, strict=True)):
        if k:
            segments.append((SEPARATOR, None))
        segments.append((text, style))
        pad = column_width - text_width(text)
        if pad > 0 and k < len(cells) - 1:
            segments.append((" " * pad, None))
    while segments and not segments[-1][0].strip():
        segments.pop()
    if segments:
        text, style = segments[-1]
        segments[-1] = (text.rstrip(), style)
    if width is not None and sum(text_width(t) for t, _ in segments) > width:
        segments = _crop(segments, width)
    return segments


def _crop(segments: Sequence[Segment], width: int) -> list[Segment]:
    out: list[Segment] = []
    room = width
    for text, style in segments:
        size = text_width(text)
        if size >= room:  # the line goes on past ``width``: this segment ends it
            out.append((_cut(text, room), style))
            break
        out.append((text, style))
        room -= size
    return out


def plain(table: Table, indent: str = "") -> list[str]:
    """Every column, every cell in full, aligned with two spaces; for pipes and files."""
    # What :func:`lines` gives without a width (``layout(table, None)``: every column as
    # wide as its widest cell, first forms, nothing shortened), each cell formed and
    # measured once: 100,000 rows make every pass over them count.
    count = len(table.columns)
    texts = [[column.header for column in table.columns],
             *([_form(cell, 0) for cell in row.cells] for row in table.rows)]
    sizes = [[text_width(text) for text in line] for line in texts]
    widths = [max(size[k] for size in sizes) for k in range(count)]
    last = count - 1

    def line(texts: Sequence[str], sizes: Sequence[int]) -> str:
        padded = [text if k == last else text + " " * (widths[k] - sizes[k])
                  for k, text in enumerate(texts)]
        return (indent + SEPARATOR.join(padded)).rstrip()

    return [line(t, n) for t, n in zip(texts, sizes, strict=True)]


# --- output ----------------------------------------------------------------------------


def terminal_width() -> int:
    """``COLUMNS`` if set, else the terminal's width (80 when neither is known)."""
    columns = shutil.get_terminal_size((80, 24)).columns
    return columns if columns > 0 else 80


class Output:
    """Where a command prints its tables and the lines around them (see the module)."""

    def __init__(self, *, color: bool, wide: bool = False, terminal: bool | None = None,
                 width: int | None = None) -> None:
        self.terminal = sys.stdout.isatty() if terminal is None else terminal
        self.color = color and self.terminal
        self.wide = wide
        self.width = (width or terminal_width()) if self.terminal and not wide else None
        self._console: Console | None = None

    def table(self, table: Table, indent: str = "") -> None:
        if not self.terminal:
            typer.echo("\n".join(plain(table, indent)))
            return
        fitted = layout(table, None if self.width is None else self.width - len(indent))
        for segments in lines(table, fitted, self.width, indent):
            self._print(segments)
        if fitted.dropped:
            self.line(f"{indent}not shown: {', '.join(fitted.dropped)} (--wide shows every "
                      "column)", "dim")

    def line(self, text: str = "", style: str | None = None) -> None:
        """One line, shortened to the terminal's width (unless ``--wide``)."""
        self._print([(text if self.width is None else shorten(text, self.width), style)])

    def _print(self, segments: Sequence[Segment]) -> None:
        if not self.color:
            typer.echo("".join(text for text, _ in segments))
            return
        from rich.text import Text

        if self._console is None:
            from rich.console import Console

            # soft_wrap: rich never wraps nor crops; the lines already fit (or are --wide)
            self._console = Console(highlight=False, soft_wrap=True, force_terminal=True)
        line = Text()
        for text, style in segments:
            line.append(text, style=style or "")
        self._console.print(line)
