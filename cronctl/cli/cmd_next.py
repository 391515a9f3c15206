"""``cronctl next JOB_OR_EXPR``: the next fire times, in local time and UTC, with DST notes.

Start-up matters here (people run it interactively and in shell loops), so this module
imports only typer, the pure cron engine, :mod:`cronctl.views.next` (the document, shared
with the HTTP API) and the light :mod:`cronctl.cli.shared`; rich
and json load when they are used, and nothing here touches the state database.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from cronctl import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import complete_zones, iso_z
from cronctl.views.next import (
    MAX_COUNT,
    MAX_LEFT_OUT,
    FireRow,
    JobLookup,
    NextTarget,
    job_target,
    next_fires,
    parse_from,
    resolve_next_target,
    to_json,
    written_of,
)


def _relative(fire: datetime, ref: datetime) -> str:
    from cronctl.durations import format_duration

    delta = fire - ref
    if delta < timedelta(0):
        return f"{format_duration(-delta)} ago"
    return f"in {format_duration(delta)}"


# Consecutive left-out instants with the same reason shown before the rest are summed
# up in one line (a per-second job on an excluded day is 86,400 of them).
SHOWN_LEFT_OUT = 3


def _collapsed(rows: Sequence[FireRow]) -> list[FireRow | tuple[int, str]]:
    """The rows, with each run of more than :data:`SHOWN_LEFT_OUT` consecutive left-out
    instants of one reason cut to its first ones and ``(how many more, reason)``."""
    out: list[FireRow | tuple[int, str]] = []
    run = 0
    for i, row in enumerate(rows):
        same = (row.left_out is not None and i > 0
                and rows[i - 1].left_out == row.left_out)
        run = run + 1 if same else (1 if row.left_out is not None else 0)
        if run <= SHOWN_LEFT_OUT:
            out.append(row)
        elif isinstance(out[-1], tuple):
            out[-1] = (out[-1][0] + 1, out[-1][1])
        else:
            out.append((1, row.left_out or ""))
    return out


def _header(target: NextTarget) -> list[tuple[str, str]]:
    schedule = target.schedule
    lines = []
    if target.job_id is not None:
        lines.append(("job", target.job_id))
    written, hash_id = written_of(target)
    lines.append(("expression", written))
    if hash_id is not None:
        lines.append(("resolved", f"{schedule.text} (H for {hash_id})"))
    lines.append(("reading", schedule.explain()))
    zone = target.timezone
    if schedule.expression is not None:
        zone += f" (dst_gap={schedule.dst_gap.value}, dst_fold={schedule.dst_fold.value})"
    elif schedule.interval is not None:
        zone += " (display only: intervals are elapsed time)"
    lines.append(("zone", zone))
    if target.jitter is not None:
        from cronctl.durations import format_duration

        lines.append(("jitter", f"each fire starts up to {format_duration(target.jitter)} "
                                "after the time shown (a delay fixed per occurrence)"))
    return lines


def _local_text(local: datetime) -> str:
    return local.isoformat(sep=" ")


def render_plain(target: NextTarget, start: datetime, rows: Sequence[FireRow],
                 now: datetime | None = None) -> str:
    """Aligned plain text, for pipes and files. "in 3h 2m" counts from ``now`` (default
    ``start``), also when ``--from`` moved the search elsewhere."""
    out = [f"{key + ':':<12}{value}" for key, value in _header(target)]
    if not rows:
        out.append("no fire within 4 years")
        return "\n".join(out)
    table = [(_local_text(r.local), iso_z(r.utc), _relative(r.utc, now or start),
              f"left out: {r.left_out}" if r.left_out else r.note or "") if isinstance(
                  r, FireRow) else ("", "", "", f"... {r[0]} more left out: {r[1]}")
             for r in _collapsed(rows)]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    out.append("")
    for local, utc, rel, note in table:
        if not local:
            out.append(note)
            continue
        line = f"{local:<{widths[0]}}  {utc:<{widths[1]}}  {rel:<{widths[2]}}  {note}"
        out.append(line.rstrip())
    if _gave_up(rows):
        out.append(_GAVE_UP)
    return "\n".join(out)


_GAVE_UP = f"(stopped after {MAX_LEFT_OUT} instants left out by the job's calendars)"


def _gave_up(rows: Sequence[FireRow]) -> bool:
    return sum(1 for row in rows if row.left_out is not None) >= MAX_LEFT_OUT


def _render_rich(target: NextTarget, start: datetime, rows: Sequence[FireRow], now: datetime,
                 color: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(no_color=not color, highlight=False)
    for key, value in _header(target):
        console.print(f"[bold]{key + ':':<12}[/bold]{value}", markup=True)
    if not rows:
        console.print("no fire within 4 years")
        return
    table = Table(show_edge=False, pad_edge=False)
    # Times never wrap (a split timestamp is unreadable); the DST note may.
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("local", no_wrap=True)
    table.add_column("UTC", no_wrap=True)
    table.add_column("when", no_wrap=True)
    table.add_column("DST / calendar")
    number = 0
    for row in _collapsed(rows):
        if isinstance(row, tuple):
            table.add_row("", "", "", "", f"... {row[0]} more left out: {row[1]}")
            continue
        if row.left_out is not None:  # not a fire: no number, struck through
            table.add_row("-", f"[strike]{_local_text(row.local)}[/strike]", iso_z(row.utc),
                          "", f"left out: {row.left_out}")
            continue
        number += 1
        table.add_row(str(number), _local_text(row.local), iso_z(row.utc),
                      _relative(row.utc, now), row.note or "")
    console.print(table)
    if _gave_up(rows):
        console.print(_GAVE_UP)


def _job_lookup(ctx: typer.Context) -> JobLookup:
    """Look a job id up in the configuration (loaded only when the argument is an id)."""

    def lookup(job_id: str) -> NextTarget | None:
        from cronctl.config import load_config
        from cronctl.jobs import find_job

        config = load_config(global_options(ctx))
        return job_target(find_job(config.job_settings, job_id, state_dir=config.state_dir))

    return lookup


def next_command(
    ctx: typer.Context,
    expression: Annotated[str, typer.Argument(
        autocompletion=_complete_job_ids,
        metavar="JOB_OR_EXPR",
        help="A job id, or a cron expression in quotes ('0 8 * * MON-FRI', '@daily', "
             "'@every 90s').")],
    count: Annotated[int, typer.Option(
        "--count", "-n", parser=argtypes.count("--count", maximum=MAX_COUNT),
        help="How many fire times to show.")] = 5,
    start: Annotated[str | None, typer.Option(
        "--from", metavar="T",
        help="Search after T instead of now: ISO 8601 (no offset = in --tz), or relative "
             "to now: '2h' / '+2h' = two hours from now, '-1d' = a day ago.")] = None,
    tz: Annotated[str | None, typer.Option(
        "--tz", metavar="ZONE", autocompletion=complete_zones,
        help="IANA time zone the expression is matched in (default UTC; for a job, its "
             "own zone).")] = None,
    hash_id: Annotated[str | None, typer.Option(
        "--hash-id", metavar="ID",
        help="The job id an expression's H is resolved with (a preview of what job ID "
             "gets); needed when the expression holds H.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Show the next fire times of a job or expression (local, UTC, DST notes)."""
    options = global_options(ctx)
    target = resolve_next_target(expression, tz, jobs=_job_lookup(ctx), hash_id=hash_id)
    now = datetime.now(UTC)  # the CLI edge is where the clock is read
    begin = parse_from(start, now, target.timezone)
    rows = next_fires(target, begin, count)
    if as_json:
        import json

        typer.echo(json.dumps(to_json(target, begin, rows), indent=2))
    elif sys.stdout.isatty():
        _render_rich(target, begin, rows, now, options.color)
    else:
        typer.echo(render_plain(target, begin, rows, now))


def _complete_job_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    from cronctl.cli.shared import complete_job_ids

    return complete_job_ids(ctx, incomplete)


def register(app: typer.Typer) -> None:
    app.command("next")(next_command)
