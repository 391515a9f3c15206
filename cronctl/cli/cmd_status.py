"""``cronctl status``: live nodes, pending and running executions, next fires; failing
and late jobs and failing notifications (:mod:`cronctl.cli.attention`).

A node is live while its last heartbeat is younger than three heartbeat intervals, the
same TTL the schedulers themselves use to decide that a node is gone (see
``cronctl/runtime/scheduler.py``). With ``database = "none"`` there is no shared state:
nodes and executions are empty, the next fires are still shown.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli.attention import Attention, attention
from cronctl.cli.options import global_options
from cronctl.cli.shared import iso_z, open_state

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import ExecutionRecord, NodeRecord, Store

HEARTBEAT_TTL_FACTOR = 3  # = runtime/scheduler.py: ttl = heartbeat_interval * 3


@dataclass(frozen=True)
class NextFire:
    job: str
    at: datetime | None  # None: never fires again (within the 4-year horizon)


@dataclass(frozen=True)
class Status:
    database: str  # display URL (password redacted) or "none"
    shared: bool  # False for database = "none": nodes and executions are not knowable
    nodes: Sequence[NodeRecord]
    active: Sequence[ExecutionRecord]
    next: Sequence[NextFire]
    paused: Sequence[str]
    disabled: Sequence[str]
    warnings: Sequence[str] = field(default=())
    attention: Attention = field(default=Attention())  # failing, late, notifications

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "shared_state": self.shared,
            "nodes": [{"id": n.node_id, "host": n.host, "pid": n.pid,
                       "started_at": iso_z(n.started_at),
                       "heartbeat_at": iso_z(n.heartbeat_at)} for n in self.nodes],
            "running": [_execution_json(r) for r in self.active],
            "next": [{"job": f.job, "next_fire": iso_z(f.at)} for f in self.next],
            "paused": list(self.paused),
            "disabled": list(self.disabled),
            **self.attention.to_json(),
        }


def _execution_json(record: ExecutionRecord) -> dict[str, Any]:
    progress = None
    if record.progress_done is not None:
        progress = {"done": record.progress_done, "total": record.progress_total,
                    "message": record.progress_message}
    return {"id": record.id, "job": record.job_id, "status": record.status.value,
            "node": record.node_id, "scheduled_at": iso_z(record.scheduled_at),
            "started_at": iso_z(record.started_at), "attempt": record.attempt,
            "origin": record.origin.value, "progress": progress,
            "cancel_requested": record.cancel_requested}


def next_fires(jobs: Sequence[JobDefinition], paused: set[str], now: datetime
               ) -> list[NextFire]:
    """The next fire of every enabled, unpaused job: soonest first, never-firing last."""
    from cronctl.jobs.checks import job_schedule

    fires = [NextFire(job.id, job_schedule(job).next_after(now))
             for job in jobs if job.enabled and job.id not in paused]
    return sorted(fires, key=lambda f: (f.at is None, f.at or now, f.job))


def collect(config: Config, store: Store | None, jobs: Sequence[JobDefinition],
            now: datetime, warnings: Sequence[str] = ()) -> Status:
    """What ``status`` shows. ``store`` is ``None`` when there is no state (yet)."""
    nodes: list[NodeRecord] = []
    active: list[ExecutionRecord] = []
    paused: set[str] = set()
    seen = Attention()
    if store is not None:
        nodes = store.live_nodes(now, config.heartbeat_interval * HEARTBEAT_TTL_FACTOR)
        active = store.pending_or_running()
        schedules = store.list_schedules()
        paused = {s.job_id for s in schedules if s.paused}
        seen = attention(store, jobs, schedules, now)
    known = {job.id for job in jobs}
    return Status(
        database="none" if config.in_memory else config.database_display,
        shared=not config.in_memory,
        nodes=nodes,
        active=active,
        next=next_fires(jobs, paused, now),
        paused=sorted(paused & known),
        disabled=sorted(job.id for job in jobs if not job.enabled),
        warnings=warnings,
        attention=seen,
    )


# --- rendering -----------------------------------------------------------------------------


def _ago(t: datetime | None, now: datetime) -> str:
    if t is None:
        return "-"
    from cronctl.durations import format_duration

    delta = now - t
    if delta.total_seconds() < 1:
        return f"{iso_z(t)} (just now)"
    return f"{iso_z(t)} ({format_duration(delta)} ago)"


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


def _when(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "never"
    from cronctl.durations import format_duration

    return f"{iso_z(at)} (in {format_duration(at - now)})"


NODE_HEADERS = ["NODE", "HOST", "PID", "STARTED", "LAST HEARTBEAT"]
RUN_HEADERS = ["ID", "JOB", "STATUS", "NODE", "SCHEDULED", "STARTED", "PROGRESS"]
NEXT_HEADERS = ["JOB", "NEXT FIRE"]


def _sections(status: Status, now: datetime) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, headers, rows, text when empty) of each table."""
    where = status.database if status.shared else "database 'none': no shared state"
    nodes = [[n.node_id, n.host, str(n.pid), _ago(n.started_at, now),
              _ago(n.heartbeat_at, now)] for n in status.nodes]
    running = [[str(r.id), r.job_id, r.status.value + (" (cancelling)" if r.cancel_requested
                                                         else ""),
                r.node_id, iso_z(r.scheduled_at) or "-", _ago(r.started_at, now),
                _progress(r)] for r in status.active]
    fires = [[f.job, _when(f.at, now)] for f in status.next]
    no_nodes = ("no live nodes" if status.shared else
                "no live nodes known (database 'none': each scheduler keeps its state in "
                "memory)")
    return [
        (f"Nodes ({where})", NODE_HEADERS, nodes, no_nodes),
        ("Pending and running", RUN_HEADERS, running,
         "nothing pending or running" if status.shared else "not known without a database"),
        ("Next fires", NEXT_HEADERS, fires, "no enabled, unpaused jobs"),
    ]


def _footer(status: Status) -> list[str]:
    lines = []
    if status.paused:
        lines.append(f"paused: {', '.join(status.paused)}")
    if status.disabled:
        lines.append(f"disabled: {', '.join(status.disabled)}")
    return lines + status.attention.lines()


def render_plain(status: Status, now: datetime) -> str:
    out: list[str] = []
    for title, headers, rows, empty in _sections(status, now):
        if out:
            out.append("")
        out.append(f"{title}:")
        if not rows:
            out.append(f"  {empty}")
            continue
        table = [headers, *rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
        out.extend("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)
                                    ).rstrip() for row in table)
    footer = _footer(status)
    if footer:
        out.extend(["", *footer])
    return "\n".join(out)


def _render_rich(status: Status, now: datetime, color: bool) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(no_color=not color, highlight=False)
    for index, (title, headers, rows, empty) in enumerate(_sections(status, now)):
        if index:
            console.print()
        console.print(f"[bold]{escape(title)}[/]")
        if not rows:
            console.print(f"  [dim]{escape(empty)}[/]")
            continue
        table = Table(box=None, header_style="bold")
        for header in headers:
            table.add_column(header, overflow="fold", no_wrap=header in ("NODE", "JOB"))
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    footer = _footer(status)
    if footer:
        console.print()
        for line in footer:
            console.print(escape(line))


# --- the command -----------------------------------------------------------------------------


def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Live nodes, pending and running executions, and the next fire of each job."""
    from cronctl.config import load_config
    from cronctl.jobs.loader import load_jobs

    options = global_options(ctx)
    now = datetime.now(UTC)
    config = load_config(options)
    loaded = load_jobs(config.job_settings, now=now)
    warnings: list[str] = []
    if loaded.violations:
        # The running schedulers keep their last valid configuration: still show the
        # nodes and executions, just not the next fires of a configuration that cannot run.
        warnings.append(f"{len(loaded.violations)} violation(s) in the job definitions; next "
                        "fires not shown (see 'cronctl validate')")
    store = None if config.in_memory else open_state(options)[1]
    try:
        result = collect(config, store, loaded.jobs, now, warnings)
    finally:
        if store is not None:
            store.close()
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
    elif sys.stdout.isatty():
        _render_rich(result, now, options.color)
    else:
        typer.echo(render_plain(result, now))


def register(app: typer.Typer) -> None:
    app.command("status")(status)
