"""``cronctl history [JOB]``: executions, newest first.

What it shares with ``logs``, ``cancel`` and the others (opening the state database,
reading ``T`` arguments, the JSON shape of one execution) is in :mod:`cronctl.cli.shared`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    escape_for_terminal,
    execution_json,
    iso_z,
    open_state,
    parse_time,
    require_job_defined,
)
from cronctl.errors import UsageError

if TYPE_CHECKING:
    from cronctl.jobs.model import ExecutionStatus
    from cronctl.store.base import ExecutionRecord


def parse_statuses(text: str | None) -> tuple[ExecutionStatus, ...] | None:
    if text is None:
        return None
    from cronctl.jobs.model import ExecutionStatus

    result: list[ExecutionStatus] = []
    for part in text.split(","):
        try:
            result.append(ExecutionStatus.parse(part))  # type: ignore[arg-type]
        except ValueError as exc:
            raise UsageError(f"--status: {exc}") from None
    return tuple(result)


# --- history ---------------------------------------------------------------------------

HEADERS = ["ID", "JOB", "SCHEDULED", "STARTED", "DURATION", "STATUS", "ATTEMPT", "NODE",
           "ORIGIN", "ERROR"]


def _duration(record: ExecutionRecord) -> str:
    if record.started_at is None or record.finished_at is None:
        return "-"
    seconds = (record.finished_at - record.started_at).total_seconds()
    if seconds < 60:
        return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.0f}s"
    from cronctl.durations import format_duration

    return format_duration(record.finished_at - record.started_at)


def _cells(record: ExecutionRecord) -> list[str]:
    error = escape_for_terminal(record.error or "").replace("\n", " ")
    if len(error) > 80:
        error = error[:77] + "..."
    return [
        str(record.id),
        escape_for_terminal(record.job_id),
        iso_z(record.scheduled_at) or "-",
        iso_z(record.started_at) or "-",
        _duration(record),
        record.status.value,
        str(record.attempt),
        escape_for_terminal(record.node_id),
        record.origin.value,
        error or "-",
    ]


def render_plain(records: Sequence[ExecutionRecord]) -> str:
    table = [HEADERS, *(_cells(record) for record in records)]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADERS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    )


_STYLES = {"succeeded": "green", "failed": "red", "dead_letter": "bold red",
           "abandoned": "yellow", "cancelled": "yellow", "running": "cyan", "pending": "dim"}


def _render_rich(records: Sequence[ExecutionRecord], color: bool) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for header in HEADERS:
        table.add_column(header, overflow="fold")
    for record in records:
        cells = [escape(cell) for cell in _cells(record)]
        style = _STYLES.get(record.status.value)
        if style:
            cells[5] = f"[{style}]{cells[5]}[/]"
        table.add_row(*cells)
    Console(no_color=not color, highlight=False).print(table)


def history(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(help="Only this job's executions.")] = None,
    status: Annotated[str | None, typer.Option(
        "--status", help="Only these statuses (comma-separated): pending, running, succeeded, "
        "failed, abandoned, cancelled, dead_letter.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Planned at or after T: ISO 8601 or relative (2h, 3d).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N rows.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Executions, newest first."""
    options = global_options(ctx)
    now = datetime.now(UTC)
    statuses = parse_statuses(status)
    since_at = parse_time(since, now) if since is not None else None
    config, store = open_state(options)
    try:
        records: list[ExecutionRecord] = []
        if store is not None:
            records = store.list_executions(job_id=job, status=statuses, since=since_at,
                                            limit=limit)
        if job is not None and not records:
            # No rows: is it a job that never ran (or not in this window), or no job at all?
            unfiltered = store.list_executions(job_id=job, limit=1) if store else []
            if not unfiltered:
                require_job_defined(config, job)
    finally:
        if store is not None:
            store.close()
    if as_json:
        typer.echo(json.dumps({"executions": [execution_json(r) for r in records]}, indent=2))
    elif not records:
        typer.echo("no executions")
    elif sys.stdout.isatty():
        _render_rich(records, options.color)
    else:
        typer.echo(render_plain(records))


def register(app: typer.Typer) -> None:
    app.command("history")(history)
