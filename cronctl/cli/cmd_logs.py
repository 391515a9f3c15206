"""``cronctl logs EXECUTION_ID | --job JOB [-f] [-n N]``: job log lines.

``EXECUTION_ID`` shows that execution's lines. ``--job JOB`` shows the lines of the job's
recent executions (oldest first, each line with its execution id), like ``journalctl
-u``; with ``-f`` it keeps printing the lines of the executions that follow, until
interrupted. Lines are written by the scheduler every ``progress_flush_interval`` and
when the execution ends, so ``-f`` shows them in batches; on one execution it stops once
that execution is final and its last lines have been read.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    complete_job_ids,
    escape_for_terminal,
    get_execution,
    iso_z,
    open_reader,
    require_job_defined,
)
from cronctl.errors import NotFoundError, UsageError
from cronctl.views.logs import job_logs_document, logs_document

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.store.base import ExecutionRecord, LogLine, Reader

FOLLOW_INTERVAL = 0.5
JOB_EXECUTIONS = 20  # --job without -n: the lines of this many newest executions


def resolve_target(
    config: Config, store: Reader | None, execution_id: int | None, job: str | None
) -> ExecutionRecord:
    """The execution named by ``EXECUTION_ID`` or ``--job JOB`` (its newest execution)."""
    if (execution_id is None) == (job is None):
        raise UsageError("give either an EXECUTION_ID or --job JOB")
    if execution_id is not None:
        return get_execution(store, execution_id)
    assert job is not None
    newest = store.list_executions(job_id=job, limit=1) if store is not None else []
    if not newest:
        require_job_defined(config, job)
        raise NotFoundError(f"job {job!r} has no executions yet")
    return newest[0]


def format_line(line: LogLine) -> str:
    return f"{iso_z(line.at)} {line.level:<7} {escape_for_terminal(line.message)}"


def logs(
    ctx: typer.Context,
    execution_id: Annotated[int | None, typer.Argument(
        parser=argtypes.execution_id(), show_default=False,
        help="The execution (see 'cronctl history').")] = None,
    job: Annotated[str | None, typer.Option(
        "--job", autocompletion=complete_job_ids,
        help=f"The lines of this job's newest {JOB_EXECUTIONS} executions (with -n: "
        "its last N lines; with -f: and of the executions that follow).")] = None,
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Keep printing new lines until the execution ends.")] = False,
    lines: Annotated[int | None, typer.Option(
        "--lines", "-n", parser=argtypes.count("--lines", minimum=0), show_default=False,
        help="Only the last N lines (then follow, with -f).")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON document (with -f: once the execution ended).")] = False,
) -> None:
    """Show an execution's job log lines."""
    options = global_options(ctx)
    config, store = open_reader(options)
    if job is not None and execution_id is None:
        try:
            _job_logs(config, store, job, lines, follow, as_json)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        finally:
            if store is not None:
                store.close()
        return
    try:
        record = resolve_target(config, store, execution_id, job)
        assert store is not None  # an execution was found, so there is a store
        shown = store.read_logs(record.id)
        if lines is not None:
            shown = shown[-lines:] if lines else []
        last_seq = shown[-1].seq if shown else _last_seq(store, record.id)
        collected = list(shown)
        if not as_json:
            for line in shown:
                typer.echo(format_line(line))
        if follow:
            record = _follow(store, record, last_seq, collected, echo=not as_json)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    finally:
        if store is not None:
            store.close()
    if as_json:
        typer.echo(json.dumps(logs_document(record, collected), indent=2))


def _job_logs(config: Config, store: Reader | None, job: str, lines: int | None,
              follow: bool, as_json: bool) -> None:
    newest = resolve_target(config, store, None, job)
    assert store is not None
    wanted = JOB_EXECUTIONS if lines is None else max(lines, 1)
    records = list(reversed(store.list_executions(job_id=job, limit=wanted)))
    tagged = [(r, line) for r in records for line in store.read_logs(r.id)]
    if lines is not None:
        tagged = tagged[-lines:] if lines else []
    if as_json:
        typer.echo(json.dumps(job_logs_document(newest, records, tagged), indent=2))
        return
    for r, line in tagged:
        typer.echo(f"[{r.id}] {format_line(line)}")
    if not follow:
        return
    seen = {r.id: (max((ln.seq for rr, ln in tagged if rr.id == r.id), default=0))
            for r in records}
    while True:  # until interrupted: new executions of the job are followed too
        time.sleep(FOLLOW_INTERVAL)
        for r in reversed(store.list_executions(job_id=job, limit=JOB_EXECUTIONS)):
            after = seen.get(r.id, 0)
            for line in store.read_logs(r.id, after_seq=after):
                typer.echo(f"[{r.id}] {format_line(line)}")
                after = line.seq
            seen[r.id] = after


def _last_seq(store: Reader, execution_id: int) -> int:
    existing = store.read_logs(execution_id)
    return existing[-1].seq if existing else 0


def _follow(store: Reader, record: ExecutionRecord, last_seq: int, collected: list[LogLine],
            *, echo: bool) -> ExecutionRecord:
    """Poll for new lines until the execution is final; one more read after that catches
    lines drained just after it ended."""
    final_reads = 0
    while True:
        current = store.get_execution(record.id) or record
        for line in store.read_logs(record.id, after_seq=last_seq):
            last_seq = line.seq
            collected.append(line)
            if echo:
                typer.echo(format_line(line))
        if current.status.is_final:
            # The scheduler may drain the last lines just after the status changed.
            final_reads += 1
            if final_reads > 1:
                return current
        time.sleep(FOLLOW_INTERVAL)


def register(app: typer.Typer) -> None:
    app.command("logs")(logs)
