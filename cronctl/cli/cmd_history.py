"""``cronctl history [JOB]``: executions, newest first.

What it shares with ``logs``, ``cancel`` and the others (opening the state database,
reading ``T`` arguments, the JSON shape of one execution) is in :mod:`cronctl.cli.shared`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    JOB_OPTION_HELP,
    complete_job_ids,
    complete_statuses,
    escape_for_terminal,
    fenced_note,
    iso_z,
    job_named,
    open_reader,
)
from cronctl.cli.tables import WIDE_HELP, Cell, Column, Output, Row, Table, local_time
from cronctl.views.history import (
    SKIPPED,
    history_document,
    parse_statuses,
    read_history,
    wants_skips,
)

if TYPE_CHECKING:
    from cronctl.store.base import ExecutionRecord


# --- history ---------------------------------------------------------------------------

# Dropped first when the terminal is narrow: ORIGIN, NODE, ATTEMPT, STARTED, DURATION,
# ERROR, SCHEDULED; the id, the job and the status always stay.
COLUMNS = (
    Column("ID"),
    Column("JOB", shrink=True, middle=True),
    Column("SCHEDULED", priority=1),
    Column("STARTED", priority=4),
    Column("DURATION", priority=3),
    Column("STATUS", status=True),
    Column("ATTEMPT", priority=5),
    Column("NODE", shrink=True, priority=6),
    Column("ORIGIN", priority=7),
    Column("ERROR", shrink=True, priority=2, floor=20),
)
# With --wide only: how a command ended and what it used (docs/behaviour.md#sandbox-and-output).
WIDE_COLUMNS = (Column("EXIT"), Column("SIGNAL"), Column("CPU"), Column("MAX RSS"))
HEADERS = [column.header for column in COLUMNS]
PLAIN_ERROR = 80  # piped, an error is cut to this many characters (unless --wide)


@dataclass(frozen=True)
class Times:
    """How a row is shown: ``now`` for short times; ``full_errors`` is False for piped
    output without ``--wide`` (an error is cut to :data:`PLAIN_ERROR` characters)."""

    now: datetime
    full_errors: bool

    def at(self, t: datetime | None, since: datetime | None = None) -> Cell:
        """ISO 8601 UTC, then this machine's local time: rows of jobs in many zones stay
        in time order, and read like the journal. Just the time of day when ``since``
        (the time it was planned) is the same local day."""
        if t is None:
            return "-"
        same_day = since is not None and t.astimezone().date() == since.astimezone().date()
        return (iso_z(t), local_time(t, None, self.now, date=not same_day))


def _duration(record: ExecutionRecord) -> str:
    if record.started_at is None or record.finished_at is None:
        return "-"
    seconds = (record.finished_at - record.started_at).total_seconds()
    if seconds < 60:
        return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.0f}s"
    from cronctl.durations import format_duration

    return format_duration(record.finished_at - record.started_at)


def _error(text: str | None, times: Times) -> str:
    error = escape_for_terminal(text or "").replace("\n", " ")
    if len(error) > PLAIN_ERROR and not times.full_errors:
        error = error[:PLAIN_ERROR - 3] + "..."
    return error or "-"


def _row(record: ExecutionRecord, times: Times) -> Row:
    return Row((
        str(record.id),
        escape_for_terminal(record.job_id),
        times.at(record.scheduled_at),
        times.at(record.started_at, since=record.scheduled_at),
        _duration(record),
        record.status.value,
        str(record.attempt),
        escape_for_terminal(record.node_id),
        record.origin.value,
        _error(record.error if record.fenced_status is None else
               f"{record.error or record.status.value}; {fenced_note(record)}", times),
    ))


def _figures(record: ExecutionRecord) -> tuple[str, ...]:
    """The ``--wide`` cells: exit code, signal, CPU seconds, peak RSS (``-`` until it is
    the job's own: :func:`cronctl.views.common.shown_max_rss`)."""
    from cronctl.sizes import format_size
    from cronctl.views.common import shown_max_rss

    rss = shown_max_rss(record)
    return ("-" if record.exit_code is None else str(record.exit_code),
            record.signal or "-",
            "-" if record.cpu_seconds is None else f"{record.cpu_seconds:.2f}s",
            "-" if rss is None else (format_size(rss) if rss < 1024 else
                                     f"{rss / 1024**2:.1f}M"))


def _skip_row(entry: Mapping[str, Any], times: Times) -> Row:
    scheduled = datetime.fromisoformat(entry["scheduled_at"])
    # No id: a skip is no execution, and one stored record covers a run of instants
    # (three instants showed the same s1); `why JOB AT` explains each.
    return Row(("-",
                escape_for_terminal(entry["job"]), times.at(scheduled), "-", "-",
                SKIPPED, "0", escape_for_terminal(entry["node"]), entry["origin"],
                _error(entry["reason"] + (f": {entry['detail']}" if entry.get("detail")
                                          else ""), times)))


def history(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(help="Only this job's executions.",
                                                       autocompletion=complete_job_ids)] = None,
    job_option: Annotated[str | None, typer.Option(
        "--job", help=JOB_OPTION_HELP, autocompletion=complete_job_ids)] = None,
    status: Annotated[str | None, typer.Option(
        "--status", help="Only these statuses (comma-separated): pending, running, succeeded, "
        "failed, abandoned, cancelled, dead_letter, lost; 'skipped' lists skip records (planned "
        "instants that did not run, with the reason).", autocompletion=complete_statuses)] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Planned at or after T: ISO 8601 or relative (2h, 3d).")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="Planned at or before T: ISO 8601 or relative (2h = two hours "
        "ago).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", parser=argtypes.count("--limit"),
                                       help="At most N rows.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help=WIDE_HELP)] = False,
) -> None:
    """Executions, newest first."""
    options = global_options(ctx)
    job = job_named(job, job_option)
    now = datetime.now(UTC)
    since_at = argtypes.parse_time(since, now, what="--since") if since is not None else None
    until_at = argtypes.parse_time(until, now, what="--until") if until is not None else None
    parse_statuses(status)  # a bad --status is a usage error before the database is opened
    config, store = open_reader(options)
    try:
        entries = read_history(store, config, job=job, status=status, since=since_at,
                               until=until_at, limit=limit)
    finally:
        if store is not None:
            store.close()
    out = Output(color=options.color, wide=wide)
    times = Times(now, full_errors=wide or out.terminal)
    rows = [(e.doc, _row(e.record, times) if e.record is not None else _skip_row(e.doc, times))
            for e in entries]
    if wide:  # the figures of a command go before the error, which stays last
        rows = [(doc, Row(row.cells[:-1] + (_figures(e.record) if e.record is not None else
                                            ("-",) * len(WIDE_COLUMNS)) + row.cells[-1:]))
                for (doc, row), e in zip(rows, entries, strict=True)]
    if as_json:
        typer.echo(json.dumps(history_document(entries), indent=2))
    elif not rows:
        typer.echo("no executions" if not wants_skips(status)
                   else "no executions or skip records")
    else:
        out.table(Table(COLUMNS[:-1] + WIDE_COLUMNS + COLUMNS[-1:] if wide else COLUMNS,
                        tuple(row for _, row in rows)))


def register(app: typer.Typer) -> None:
    app.command("history")(history)
