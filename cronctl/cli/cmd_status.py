"""``cronctl status``: live nodes, pending and running executions, next fires; failing
and late jobs and failing notifications. What it collects and its JSON document are in
:mod:`cronctl.views.status` (shared with ``GET /api/v1/status``); this module renders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import iso_z, reader_for
from cronctl.cli.tables import (
    WIDE_HELP,
    Cell,
    Column,
    Output,
    Row,
    Table,
    ago,
    local_time,
    until,
)
from cronctl.escaping import printable
from cronctl.views.status import Status, collect

if TYPE_CHECKING:
    from cronctl.store.base import ExecutionRecord

# --- rendering -----------------------------------------------------------------------------


def _ago(t: datetime | None, now: datetime) -> Cell:
    if t is None:
        return "-"
    return (f"{iso_z(t)} ({ago(t, now)})", ago(t, now))


def _progress(record: ExecutionRecord) -> str:
    if record.progress_done is None:
        return "-"
    done = f"{record.progress_done:g}"
    text = done
    if record.progress_total:
        share = 100 * record.progress_done / record.progress_total
        text = f"{done}/{record.progress_total:g} ({share:.0f}%)"
    if record.progress_message:
        text += f" {record.progress_message}"
    return text


def _when(at: datetime | None, now: datetime) -> Cell:
    if at is None:
        return "never"
    wait = until(at, now)
    return (f"{iso_z(at)} ({wait})", f"{local_time(at, None, now)} ({wait})", wait)


def _scheduled(at: datetime, now: datetime) -> Cell:
    return (iso_z(at), local_time(at, None, now))


# Dropped first when the terminal is narrow: the highest priority number.
NODE_COLUMNS = (Column("NODE", shrink=True), Column("HOST", shrink=True, priority=2),
                Column("PID", priority=3), Column("STARTED", priority=1),
                Column("LAST HEARTBEAT"))
RUN_COLUMNS = (Column("ID"), Column("JOB", shrink=True, middle=True), Column("STATUS", status=True),
               Column("NODE", shrink=True, priority=4), Column("SCHEDULED", priority=3),
               Column("STARTED", priority=2), Column("PROGRESS", shrink=True, priority=1,
                                                     floor=16))
QUEUED_COLUMNS = (Column("REQUEST"), Column("JOB", shrink=True, middle=True),
                  Column("ORIGIN"), Column("FOR", priority=2), Column("REQUESTED", priority=1),
                  Column("WAITING ON", shrink=True))
NEXT_COLUMNS = (Column("JOB", shrink=True, floor=16, middle=True), Column("NEXT FIRE"))


def _sections(status: Status, now: datetime
              ) -> list[tuple[str, Sequence[Column | str], list[list[Cell]], str]]:
    """(title, columns, rows, text when empty) of each table; a column given as a bare
    header keeps its cells whole and is never left out."""
    where = status.database if status.shared else "database 'none': no shared state"
    nodes: list[list[Cell]] = [[n.node_id, n.host, str(n.pid), _ago(n.started_at, now),
                                _ago(n.heartbeat_at, now)] for n in status.nodes]
    running: list[list[Cell]] = [
        [str(r.id), r.job_id, r.status.value + (" (cancelling)" if r.cancel_requested else ""),
         r.node_id, _scheduled(r.scheduled_at, now), _ago(r.started_at, now), _progress(r)]
        for r in status.active]
    fires: list[list[Cell]] = [[f.job, _when(f.at, now)] for f in status.next]
    no_nodes = ("no live nodes" if status.shared else
                "no live nodes known (database 'none': each scheduler keeps its state in "
                "memory)")
    sections: list[tuple[str, Sequence[Column | str], list[list[Cell]], str]] = [
        (f"Nodes ({where})", NODE_COLUMNS, nodes, no_nodes),
        ("Pending and running", RUN_COLUMNS, running,
         "nothing pending or running" if status.shared else "not known without a database"),
    ]
    if status.queued:  # trigger/replay requests: invisible while no scheduler took them
        waiting_on = ("a live scheduler that has the job" if status.nodes
                      else "a scheduler: none is live ('cronctl run')")
        queued: list[list[Cell]] = [
            [str(q.id), q.job_id, q.origin.value,
             "now" if q.scheduled_at is None else _scheduled(q.scheduled_at, now),
             _ago(q.requested_at.replace(microsecond=0), now),
             "its parents" if q.taken_by == "" else (
                 f"{q.taken_by} (taken)" if q.taken_by else waiting_on)]
            for q in status.queued]
        sections.append(("Queued requests (trigger, replay)", QUEUED_COLUMNS, queued, ""))
    sections.append(("Next fires", NEXT_COLUMNS, fires, "no enabled, unpaused jobs"))
    return sections


def _footer(status: Status) -> list[str]:
    lines = []
    if status.paused:
        lines.append(f"paused: {', '.join(status.paused)}")
    if status.disabled:
        lines.append(f"disabled: {', '.join(status.disabled)}")
    if status.containment is not None:
        lines.append(f"a command's processes end with it: {status.containment.describe()}")
    return lines + status.attention.lines()


def render(status: Status, now: datetime, out: Output) -> None:
    """Each section: its title, then its table (indented) or what it means that it is
    empty; then the paused and disabled jobs."""
    for index, (title, columns, rows, empty) in enumerate(_sections(status, now)):
        if index:
            out.line()
        out.line(f"{title}:", "bold")
        if not rows:
            out.line(f"  {empty}", "dim")
            continue
        out.table(Table(tuple(c if isinstance(c, Column) else Column(c) for c in columns),
                        tuple(Row(tuple(row)) for row in rows)), indent="  ")
    footer = _footer(status)
    if footer:
        out.line()
        for line in footer:
            out.line(line)


# --- the command -----------------------------------------------------------------------------


def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help=WIDE_HELP)] = False,
) -> None:
    """Live nodes, pending and running executions, and the next fire of each job."""
    from cronctl.config import load_config
    from cronctl.jobs.loader import load_jobs

    options = global_options(ctx)
    now = datetime.now(UTC)
    config = load_config(options)
    loaded = load_jobs(config.job_settings, now=now, state_dir=config.state_dir)
    warnings: list[str] = []
    if loaded.violations:
        # The running schedulers keep their last valid set: the valid jobs' next fires
        # and what needs attention are still shown, with the first problem named.
        more = len(loaded.violations) - 1
        warnings.append(f"{loaded.violations[0]}" + (f" (and {more} more)" if more else "")
                        + "; the jobs shown are the valid ones (see 'cronctl validate')")
    store = None if config.in_memory else reader_for(config)
    try:
        result = collect(config, store, loaded.shown, now, warnings)
    finally:
        if store is not None:
            store.close()
    for warning in result.warnings:
        typer.echo(printable(f"warning: {warning}"), err=True)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        render(result, now, Output(color=options.color, wide=wide))


def register(app: typer.Typer) -> None:
    app.command("status")(status)
