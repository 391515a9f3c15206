"""``cronctl history [JOB]``: executions, newest first.

What it shares with ``logs``, ``cancel`` and the others (opening the state database,
reading ``T`` arguments, the JSON shape of one execution) is in :mod:`cronctl.cli.shared`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    complete_job_ids,
    escape_for_terminal,
    execution_json,
    fenced_note,
    iso_z,
    open_reader,
    require_job_defined,
)
from cronctl.cli.tables import WIDE_HELP, Cell, Column, Output, Row, Table, local_time
from cronctl.errors import UsageError

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import ExecutionStatus
    from cronctl.store.base import ExecutionRecord
    from cronctl.store.reader import Reader
    from cronctl.store.records import SkipRecord


SKIPPED = "skipped"


def parse_statuses(text: str | None) -> tuple[ExecutionStatus, ...] | None:
    if text is None:
        return None
    from cronctl.jobs.model import ExecutionStatus

    result: list[ExecutionStatus] = []
    for part in text.split(","):
        if part.strip().lower() == SKIPPED:
            continue
        try:
            result.append(ExecutionStatus.parse(part))  # type: ignore[arg-type]
        except ValueError as exc:
            raise UsageError(f"--status: {exc} (or {SKIPPED!r} for skip records)") from None
    return tuple(result)


def wants_skips(text: str | None) -> bool:
    return text is not None and any(p.strip().lower() == SKIPPED for p in text.split(","))


def skip_entries(store: Reader, config: Config, *, job_id: str | None,
                 since: datetime | None, until: datetime | None, limit: int
                 ) -> list[dict[str, Any]]:
    """Skip records in the ``history --json`` shape, one entry per planned instant (a
    stored run of consecutive skips is expanded with the job's schedule), newest first."""
    from cronctl.ids import occurrence_id

    runs = store.list_skips(job_id=job_id, since=since, until=until, limit=limit)
    schedules: dict[str, Any] = {}
    entries: list[dict[str, Any]] = []
    for run in runs:
        instants = [run.first_at] if run.count == 1 else _expand(run, config, schedules)
        for at in reversed(instants):
            if (since is not None and at < since) or (until is not None and at > until):
                continue
            entries.append({
                # Not an execution: "id" stays null (an execution id could collide with
                # it) and the skip record's own id is "skip_id" (s<N> in tables).
                "id": None, "skip_id": run.id, "job": run.job_id,
                "occurrence_id": occurrence_id(run.job_id, at),
                "scheduled_at": iso_z(at), "started_at": None, "finished_at": None,
                "status": SKIPPED, "reason": run.reason, "attempt": 0, "node": run.node_id,
                "origin": "dependency" if run.reason == "upstream" else "cron",
                "error": None, "detail": run.detail,  # which calendar, which parent
            })
            if len(entries) >= limit:
                return entries
    return entries


def _expand(run: SkipRecord, config: Config, schedules: dict[str, Any]) -> list[datetime]:
    """The planned instants of a run: the job's fires in ``[first_at, last_at]``, or just
    the two ends when the job is no longer defined."""
    from datetime import timedelta

    from cronctl.core.timing import schedule_for
    from cronctl.errors import CronctlError
    from cronctl.jobs.loader import find_job

    if run.job_id not in schedules:
        try:
            schedules[run.job_id] = schedule_for(find_job(config.job_settings, run.job_id))
        except CronctlError:
            schedules[run.job_id] = None
    schedule = schedules[run.job_id]
    if schedule is not None:
        fires = schedule.between(run.first_at - timedelta(microseconds=1), run.last_at,
                                 limit=run.count)
        if fires:
            return list(fires)
    return [run.first_at, run.last_at]


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
# With --wide only: how a command ended and what it used (SPEC section 9).
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
    """The ``--wide`` cells: exit code, signal, CPU seconds, peak RSS."""
    from cronctl.sizes import format_size

    rss = record.max_rss_bytes
    return ("-" if record.exit_code is None else str(record.exit_code),
            record.signal or "-",
            "-" if record.cpu_seconds is None else f"{record.cpu_seconds:.2f}s",
            "-" if rss is None else (format_size(rss) if rss < 1024 else
                                     f"{rss / 1024**2:.1f}M"))


def _skip_row(entry: dict[str, Any], times: Times) -> Row:
    scheduled = datetime.fromisoformat(entry["scheduled_at"])
    return Row(("-" if entry["skip_id"] is None else f"s{entry['skip_id']}",
                escape_for_terminal(entry["job"]), times.at(scheduled), "-", "-",
                SKIPPED, "0", escape_for_terminal(entry["node"]), entry["origin"],
                _error(entry["reason"] + (f": {entry['detail']}" if entry.get("detail")
                                          else ""), times)))


def history(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(help="Only this job's executions.",
                                                       autocompletion=complete_job_ids)] = None,
    status: Annotated[str | None, typer.Option(
        "--status", help="Only these statuses (comma-separated): pending, running, succeeded, "
        "failed, abandoned, cancelled, dead_letter, lost; 'skipped' lists skip records (planned "
        "instants that did not run, with the reason).")] = None,
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
    now = datetime.now(UTC)
    statuses = parse_statuses(status)  # () when only skip records were asked for
    skipped = wants_skips(status)
    since_at = argtypes.parse_time(since, now, what="--since") if since is not None else None
    until_at = argtypes.parse_time(until, now, what="--until") if until is not None else None
    if since_at is not None and until_at is not None and since_at > until_at:
        raise UsageError(f"--since {iso_z(since_at)} is after --until {iso_z(until_at)}")
    config, store = open_reader(options)
    try:
        records: list[ExecutionRecord] = []
        skips: list[dict[str, Any]] = []
        if store is not None:
            if statuses is None or statuses:
                records = store.list_executions(job_id=job, status=statuses, since=since_at,
                                                until=until_at, limit=limit)
            if skipped:
                skips = skip_entries(store, config, job_id=job, since=since_at,
                                     until=until_at, limit=limit)
        if job is not None and not records and not skips:
            # No rows: is it a job that never ran (or not in this window), or no job at all?
            unfiltered = store.list_executions(job_id=job, limit=1) if store else []
            if not unfiltered:
                require_job_defined(config, job)
    finally:
        if store is not None:
            store.close()
    out = Output(color=options.color, wide=wide)
    times = Times(now, full_errors=wide or out.terminal)
    rows = [(execution_json(r), _row(r, times)) for r in records]
    if wide:  # (before the error, which stays last)
        rows = [(doc, Row(row.cells[:-1] + _figures(r) + row.cells[-1:]))
                for (doc, row), r in zip(rows, records, strict=True)]
    skip_rows = [(entry, _skip_row(entry, times)) for entry in skips]
    if wide:
        skip_rows = [(doc, Row(row.cells[:-1] + ("-",) * len(WIDE_COLUMNS) + row.cells[-1:]))
                     for doc, row in skip_rows]
    rows += skip_rows
    rows.sort(key=lambda row: row[0]["scheduled_at"], reverse=True)  # stable: ids stay
    rows = rows[:limit]
    if as_json:
        typer.echo(json.dumps({"executions": [doc for doc, _ in rows]}, indent=2))
    elif not rows:
        typer.echo("no executions" if not skipped else "no executions or skip records")
    else:
        out.table(Table(COLUMNS[:-1] + WIDE_COLUMNS + COLUMNS[-1:] if wide else COLUMNS,
                        tuple(row for _, row in rows)))


def register(app: typer.Typer) -> None:
    app.command("history")(history)
