"""``cronctl trigger JOB [--wait] [--here] [--json]``: run one occurrence now
(``origin = manual``).

By default the request goes through the database to a running scheduler, which picks it
up at once if it runs on this host (woken: :mod:`cronctl.wake`), else within a second
(any node that has the job; exactly one takes it). ``--here`` runs it
in this process instead (no scheduler needed). ``--wait`` waits for the final status:
exit 0 when it succeeded, 1 otherwise. An unknown job exits 3.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import JOB_OPTION_HELP, complete_job_ids, one_job, reader_for
from cronctl.views.actions import (
    NoScheduler,
    Waiting,
    chain_for,
    enqueue_trigger,
    final_document,
    no_scheduler,
    trigger_document,
    wait_taken,
)

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.model import JobDefinition
    from cronctl.store.base import ExecutionRecord, Requester

POLL = 0.2


class _Emit:
    """One JSON document with ``--json``; else one line, which ``--quiet`` silences (the
    exit code still tells)."""

    def __init__(self, as_json: bool, quiet: bool) -> None:
        self.as_json = as_json
        self.quiet = quiet

    def __call__(self, document: Mapping[str, object], text: str) -> None:
        if self.as_json:
            typer.echo(json.dumps(document))
        elif not self.quiet:
            typer.echo(text)


def trigger(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(
        metavar="JOB", help="The job to run.", autocompletion=complete_job_ids)] = None,
    job_option: Annotated[str | None, typer.Option(
        "--job", help=JOB_OPTION_HELP, autocompletion=complete_job_ids)] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the final status.")] = False,
    here: Annotated[bool, typer.Option(
        "--here", help="Run it in this process instead of a running scheduler.")] = False,
    chain: Annotated[bool, typer.Option(
        "--chain", help="Also run the jobs that depend on JOB (after = [...]) for this "
        "occurrence, once it has ended as they require.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    timeout: Annotated[str | None, typer.Option(
        "--timeout", metavar="DURATION",
        help="With --wait: give up waiting after DURATION (e.g. 90s, 1h; exit 1, the run "
        "goes on). Without it --wait waits as long as the run lasts, and stops when no "
        "live scheduler is left to finish it.")] = None,
) -> None:
    """Run one occurrence of JOB now (origin = manual)."""
    from cronctl.config import load_config
    from cronctl.jobs.loader import find_job

    options = global_options(ctx)
    job = one_job(job, job_option)
    bound = _timeout(timeout, wait)
    config = load_config(options)
    definition = find_job(config.job_settings, job)  # NotFoundError: exit 3
    emit = _Emit(as_json, options.quiet)
    if here and chain:
        from cronctl.errors import UsageError

        raise UsageError("--chain goes through a running scheduler; it cannot be combined "
                         "with --here")
    chained = chain_for(config, job) if chain else []
    if here:
        _here(config, definition, emit)
        return
    # Without SQLAlchemy when the database is at the schema head (cronctl.store.reader):
    # its import was half of this command's wall time on 100,000 jobs.
    store = reader_for(config, missing_ok=True)  # no database: no scheduler ran
    if store is None:
        raise NoScheduler(no_scheduler(config))
    waiting = Waiting(config.heartbeat_interval * 3,
                      None if bound is None else time.monotonic() + bound)
    try:
        _queue(config, store, definition, wait, emit, chained, waiting)
    finally:
        store.close()


def _timeout(text: str | None, wait: bool) -> float | None:
    """``--timeout`` in seconds (a usage error without ``--wait``, or when malformed)."""
    from cronctl.errors import UsageError

    if text is None:
        return None
    if not wait:
        raise UsageError("--timeout bounds --wait; add --wait (without it, trigger returns "
                         "as soon as the run started)")
    from cronctl.durations import parse_duration

    try:
        return parse_duration(text, allow_zero=False).total_seconds()
    except ValueError as exc:
        raise UsageError(f"--timeout: {exc}") from None


def _here(config: Config, job: JobDefinition, emit: _Emit) -> None:
    from cronctl.runtime.fire.oneshot import run_here
    from cronctl.runtime.logsetup import configure_logging
    from cronctl.store import open_store

    configure_logging()
    store = open_store(config.database, node_id=config.node_id, auto_migrate=config.auto_migrate)
    stop = threading.Event()  # SIGTERM/SIGINT: cancel the attempt, record it cancelled

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        result = run_here(job, store, stop=stop,
                          heartbeat_interval=config.heartbeat_interval,
                          max_log_lines=config.retention.max_log_lines)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        store.close()
    doc = {"job": result.job_id, "occurrence_id": result.occurrence_id,
           "execution_id": result.execution_id, "attempt": result.attempt,
           "status": result.status.value, "error": result.error}
    exec_text = f"execution {result.execution_id}" if result.execution_id else "untracked"
    error = f": {result.error}" if result.error else ""
    emit(doc, f"job {job.id}: {result.status.value} ({exec_text}, attempt "
                        f"{result.attempt}){error}")
    if result.status.value != "succeeded":
        raise typer.Exit(1)


def _queue(config: Config, store: Requester, job: JobDefinition, wait: bool, emit: _Emit,
           chained: list[str], waiting: Waiting) -> None:
    now = datetime.now(UTC)
    if not wait:
        # The execution id is what `cronctl logs` and `cronctl cancel` take: wait the
        # second it takes a scheduler to start it, and print that.
        doc, started = trigger_document(config, store, job.id, now, chained)
        node = f" on node {started.node_id}" if started is not None else ""
        then = f"; then {', '.join(chained)}" if chained else ""
        emit(doc, f"started: job {job.id}, execution {doc['execution_id']}{node} "
                  f"(follow it: cronctl logs -f {doc['execution_id']}){then}")
        return
    request_id = enqueue_trigger(config, store, job.id, now, chained)
    execution_id = wait_taken(store, request_id, job.id, waiting)
    record = _wait_final(store, job, execution_id, waiting)
    final = final_document(job.id, request_id, record, chained)
    error = f": {record.error}" if record.error else ""
    emit(final, f"job {job.id}: {record.status.value} (execution {record.id}, "
                        f"attempt {record.attempt}, node {record.node_id}){error}")
    if record.status.value != "succeeded":
        raise typer.Exit(1)


def _wait_final(store: Requester, job: JobDefinition, execution_id: int, waiting: Waiting
                ) -> ExecutionRecord:
    """The occurrence's final record: retries run under the same occurrence id, so wait
    until its newest attempt ended and no further attempt can follow. Bounded by
    ``--timeout``, and by the nodes: an attempt whose node stopped answering, with no live
    node left to recover it, ends the wait (exit 1) with what is known."""
    from cronctl.core.timing import retry_delay

    first = store.get_execution(execution_id)
    assert first is not None
    while True:
        attempts = store.executions_of_occurrence(job.id, first.occurrence_id)
        newest = attempts[-1] if attempts else first
        status = newest.status.value
        if status in ("succeeded", "cancelled", "dead_letter") or (
                newest.status.is_final and newest.attempt >= job.max_attempts):
            return newest
        if newest.status.is_final and newest.finished_at is not None:
            # a failed attempt with attempts left: its retry is due after the backoff
            backoff = retry_delay(job.retry_backoff, newest.attempt)
            if datetime.now(UTC) > newest.finished_at + backoff + timedelta(minutes=1):
                return newest  # the retry never came (scheduler stopped)
        elif not newest.status.is_final and not waiting.live(store):
            raise NoScheduler(
                f"execution {newest.id} of job {job.id} is {status} on node "
                f"{newest.node_id}, which stopped answering, and no live scheduler is left "
                "to recover it; its outcome is unknown until 'cronctl run' starts again")
        waiting.check(f"execution {newest.id} of job {job.id} is still {status} (attempt "
                      f"{newest.attempt}); follow it: cronctl logs -f {newest.id}")
        time.sleep(POLL)


def register(app: typer.Typer) -> None:
    app.command("trigger")(trigger)
