"""``cronctl history [JOB]``: executions, newest first.

Also holds what ``logs`` and ``cancel`` share with it: opening the state database for an
operator command, reading ``T`` arguments, and the JSON shape of one execution.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli import argtypes
from cronctl.cli.options import GlobalOptions, global_options
from cronctl.errors import NotFoundError, StoreError, UsageError

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import ExecutionStatus
    from cronctl.store.base import ExecutionRecord, Store


# --- shared by history, logs and cancel ------------------------------------------------


def iso_z(t: datetime | None) -> str | None:
    """Aware datetime as ISO 8601 UTC with ``Z`` (``None`` stays ``None``)."""
    if t is None:
        return None
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


_RELATIVE = re.compile(r"^\s*\d+(\.\d+)?\s*(ms|s|m|h|d|w)(\s*\d+(\.\d+)?\s*(ms|s|m|h|d|w))*\s*$",
                       re.IGNORECASE)


def parse_time(text: str, now: datetime, *, what: str = "--since") -> datetime:
    """``T``: ISO 8601 (a time without an offset is UTC; ``Z`` allowed; a bare date is its
    midnight UTC) or a relative duration meaning that long ago (``2h``, ``3d``,
    ``1h30m``)."""
    from cronctl.durations import DurationError, parse_duration

    value = text.strip()
    if _RELATIVE.match(value):
        try:
            return now - parse_duration(value)
        except DurationError as exc:
            raise UsageError(f"{what}: {exc}") from None
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise UsageError(
            f"{what}: {text!r} is neither an ISO 8601 time (2026-03-08T07:00:00Z) nor a "
            "relative one (2h, 3d)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def open_state(options: GlobalOptions) -> tuple[Config, Store | None]:
    """The config and its store. ``None`` when the SQLite file does not exist yet (nothing
    ever ran; an operator command must not create it). Raises :class:`StoreError` for
    ``database = "none"``: there is no shared state to look at."""
    from cronctl.config import load_config, redact_url

    config = load_config(options)
    url = config.database
    if url.strip().lower() == "none":
        raise StoreError(
            "the database is 'none': executions are kept in the scheduler's memory only; "
            "set [scheduler] database (or --database) to a SQLite or PostgreSQL URL"
        )
    if _sqlite_file_missing(url):
        return config, None
    from cronctl.store import open_store

    try:
        store = open_store(url, node_id=config.node_id, auto_migrate=config.auto_migrate)
    except StoreError:
        raise
    except Exception as exc:  # a driver error the store did not wrap
        raise StoreError(f"cannot open {redact_url(url)}: {exc}") from None
    return config, store


def _sqlite_file_missing(url: str) -> bool:
    if not url.lower().startswith("sqlite"):
        return False
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:
        return False
    database = parsed.database
    if database in (None, "", ":memory:") or database.startswith("file:"):
        return False
    return not Path(database).exists()


def require_job_defined(config: Config, job_id: str) -> None:
    """:class:`NotFoundError` (exit 3) unless some source defines ``job_id``."""
    from cronctl.errors import ConfigError
    from cronctl.jobs.loader import find_job

    try:
        find_job(config, job_id)
    except ConfigError:
        return  # defined, just invalid: it exists
    except NotFoundError:
        raise


def execution_json(record: ExecutionRecord) -> dict[str, Any]:
    """The stable ``history --json`` shape of one execution."""
    return {
        "id": record.id,
        "job": record.job_id,
        "occurrence_id": record.occurrence_id,
        "scheduled_at": iso_z(record.scheduled_at),
        "started_at": iso_z(record.started_at),
        "finished_at": iso_z(record.finished_at),
        "status": record.status.value,
        "attempt": record.attempt,
        "node": record.node_id,
        "origin": record.origin.value,
        "error": record.error,
    }


def get_execution(store: Store | None, execution_id: int) -> ExecutionRecord:
    record = None if store is None else store.get_execution(execution_id)
    if record is None:
        raise NotFoundError(f"no execution {execution_id}")
    return record


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


def escape_for_terminal(text: str) -> str:
    """Control characters escaped, except newlines and tabs (tracebacks stay readable)."""
    from cronctl.dispatch.logbuffer import escape_control

    return "\n".join(escape_control(line).replace("\\t", "\t") for line in text.split("\n"))


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
    until: Annotated[str | None, typer.Option(
        "--until", help="Planned at or before T: ISO 8601 or relative (2h = two hours "
        "ago).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", parser=argtypes.count("--limit"),
                                       help="At most N rows.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Executions, newest first."""
    options = global_options(ctx)
    now = datetime.now(UTC)
    statuses = parse_statuses(status)
    since_at = argtypes.parse_time(since, now, what="--since") if since is not None else None
    until_at = argtypes.parse_time(until, now, what="--until") if until is not None else None
    if since_at is not None and until_at is not None and since_at > until_at:
        raise UsageError(f"--since {iso_z(since_at)} is after --until {iso_z(until_at)}")
    config, store = open_state(options)
    try:
        records: list[ExecutionRecord] = []
        if store is not None:
            records = store.list_executions(job_id=job, status=statuses, since=since_at,
                                            until=until_at, limit=limit)
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
