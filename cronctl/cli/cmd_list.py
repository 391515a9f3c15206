"""``cronctl list``: the jobs with their schedule, zone, mode, target and next fire."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import check_all, iso_z
from cronctl.cli.tables import WIDE_HELP, Cell, Column, Output, Row, Table
from cronctl.escaping import printable
from cronctl.views.jobs import JobStatusSource, ListRow, list_document_text, list_rows

if TYPE_CHECKING:
    from cronctl.config import Config


def _when(row: ListRow, now: datetime, seen: dict[tuple[datetime, str], Cell]) -> Cell:
    """The next fire: in UTC with how long until it (piped, ``--wide``), in the job's
    zone, or just how long until it. ``seen``: the cells already made, by instant and
    zone (a large set has few distinct next fires)."""
    if not row.enabled:
        return "disabled"
    if row.paused:
        return "paused"
    if row.next_fire is None:
        return "never"
    key = (row.next_fire, row.timezone)
    if key in seen:
        return seen[key]
    from cronctl.cli.tables import local_time, until

    wait = until(row.next_fire, now)
    cell = (f"{iso_z(row.next_fire)} ({wait})",
            f"{local_time(row.next_fire, row.timezone, now)} ({wait})", wait)
    seen[key] = cell
    return cell


# Dropped first when the terminal is narrow: CALENDAR, AFTER, MODE, ZONE, TARGET, SCHEDULE;
# the id, the next fire and the last status always stay.
COLUMNS = (
    Column("ID", shrink=True, floor=16, middle=True),
    Column("SCHEDULE", priority=2),
    Column("ZONE", priority=4),
    Column("MODE", priority=5),
    Column("TARGET", shrink=True, priority=3),
    Column("AFTER", shrink=True, priority=6),
    Column("CALENDAR", shrink=True, priority=7),
    Column("NEXT FIRE"),
    Column("LAST STATUS", status=True),
)
HEADERS = [column.header for column in COLUMNS]


def _schedule(row: ListRow) -> Cell:
    """As written; with H, also what it resolved to (alone when room is short)."""
    if row.resolved in ("", row.schedule):
        return row.schedule
    return (f"{row.schedule} = {row.resolved}", row.resolved)


_AFTER, _CALENDAR = 5, 6  # shown only when some job has parents / calendars


def table(rows: Sequence[ListRow], now: datetime) -> Table:
    drop = {i for i, used in ((_AFTER, any(r.after for r in rows)),
                              (_CALENDAR, any(r.calendars for r in rows))) if not used}
    seen: dict[tuple[datetime, str], Cell] = {}
    cells = (
        (row.id, _schedule(row), row.timezone, row.mode, row.target,
         ",".join(row.after) or "-", ",".join(row.calendars) or "-", _when(row, now, seen),
         row.last_status or "-")
        for row in rows)
    return Table(tuple(c for i, c in enumerate(COLUMNS) if i not in drop), tuple(
        Row(tuple(c for i, c in enumerate(cell) if i not in drop),
            style=None if row.enabled else "dim")
        for row, cell in zip(rows, cells, strict=True)))


def _statuses(checked: Any) -> JobStatusSource | None:
    """Last status and paused flags from the state database; without it (unreadable,
    unreachable) the jobs are still listed, with a warning on stderr."""
    from cronctl.errors import StoreError
    from cronctl.store.status import read_statuses

    config = checked.config
    try:
        return read_statuses(
            config.database, [job.id for job in checked.result.shown], node_id=config.node_id
        )
    except StoreError as exc:
        typer.echo(printable(f"warning: {exc}; last status and paused flags not shown"),
                   err=True)
        return None


def _no_jobs(config: Config) -> str:
    """"no jobs", and where they were looked for: in a directory without cronctl.toml it
    said only that, and the reader could not tell a wrong directory from an empty one."""
    jobs_dir = config.job_settings.jobs_dir
    config_file = (f"config {config.path}" if config.path is not None
                   else "no cronctl.toml found (./cronctl.toml, /etc/cronctl/cronctl.toml)")
    if not jobs_dir.is_dir():
        return (f"no jobs: {config_file}, and the jobs directory {jobs_dir} does not exist "
                "(see --config, --jobs-dir)")
    return f"no jobs in {jobs_dir} ({config_file}), nor from installed packages"


def list_jobs(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help=WIDE_HELP)] = False,
) -> None:
    """List the jobs: id, schedule, zone, mode, target, parents (after), calendars, next
    fire and last status."""
    options = global_options(ctx)
    now = datetime.now(UTC)
    checked = check_all(options, now=now, cached=True)
    # One bad file does not hide the others: the valid jobs are listed (a running
    # scheduler keeps its last good set), the violations go to stderr, the exit is 1.
    for violation in checked.violations:
        typer.echo(str(violation), err=True)
    from cronctl.heap import collector_paused

    # 100,000 rows, all alive until printed: no collection walks them meanwhile
    with collector_paused():
        rows = list_rows(checked.config, checked.result.shown, now, _statuses(checked))
        if not rows and checked.violations:
            pass  # nothing valid to list: the violations and the error line say it all
        elif as_json:
            typer.echo(list_document_text(rows))
        elif not rows:
            typer.echo(_no_jobs(checked.config))
        else:
            Output(color=options.color, wide=wide).table(table(rows, now))
    if checked.violations:
        typer.echo(f"error: {len(checked.violations)} violation(s); the jobs listed are the "
                   "valid ones (a running scheduler keeps its last valid set until they are "
                   "fixed; see 'cronctl validate')", err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("list")(list_jobs)
