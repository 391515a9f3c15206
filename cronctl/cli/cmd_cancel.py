"""``cronctl cancel EXECUTION_ID [--wait] | --job JOB``: cooperative cancel.

The request is a flag on the execution row, so it works from any process and any node:
the scheduler running the execution polls for it, then Python handlers see
``is_cancelled()`` and commands get SIGTERM (SIGKILL after ``kill_timeout``).
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    complete_job_ids,
    get_execution,
    open_state,
    require_job_defined,
)
from cronctl.errors import NotFoundError, UsageError
from cronctl.views.actions import AlreadyFinal, cancel_document, require_cancellable

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.store.base import ExecutionRecord, Store

WAIT_INTERVAL = 0.25


def _targets(config: Config, store: Store | None, execution_id: int | None,
             job: str | None) -> list[ExecutionRecord]:
    if (execution_id is None) == (job is None):
        raise UsageError("give either an EXECUTION_ID or --job JOB")
    if execution_id is not None:
        record = get_execution(store, execution_id)
        require_cancellable(record)
        return [record]
    assert job is not None
    active = store.pending_or_running(job_ids=[job]) if store is not None else []
    if not active:
        newest = store.list_executions(job_id=job, limit=1) if store is not None else []
        if not newest:
            require_job_defined(config, job)
        raise AlreadyFinal(f"job {job!r} has no pending or running execution; nothing to "
                           "cancel")
    return active


def _wait_final(store: Store, ids: list[int], timeout: timedelta | None) -> list[ExecutionRecord]:
    deadline = None if timeout is None else time.monotonic() + timeout.total_seconds()
    while True:
        records = [store.get_execution(i) for i in ids]
        current = [r for r in records if r is not None]
        if all(r.status.is_final for r in current):
            return current
        if deadline is not None and time.monotonic() >= deadline:
            return current
        time.sleep(WAIT_INTERVAL)


def cancel(
    ctx: typer.Context,
    execution_id: Annotated[int | None, typer.Argument(
        parser=argtypes.execution_id(), show_default=False,
        help="The execution to cancel (see 'cronctl history').")] = None,
    job: Annotated[str | None, typer.Option(
        "--job", help="Cancel every pending or running execution of this job.",
        autocompletion=complete_job_ids)] = None,
    wait: Annotated[bool, typer.Option(
        "--wait", help="Wait until the execution has ended.")] = False,
    timeout: Annotated[str | None, typer.Option(
        "--timeout", help="With --wait: give up after this long (e.g. 30s); exit 1.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Ask the scheduler to cancel a running execution (cooperatively)."""
    from cronctl.durations import DurationError, parse_duration

    options = global_options(ctx)
    try:
        wait_limit = parse_duration(timeout) if timeout is not None else None
    except DurationError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    config, store = open_state(options)
    try:
        targets = _targets(config, store, execution_id, job)
        assert store is not None
        requested: list[ExecutionRecord] = []
        for record in targets:
            if store.request_cancel(record.id):
                requested.append(record)
        if not requested:
            latest = get_execution(store, targets[0].id)
            raise AlreadyFinal(f"execution {latest.id} of job {latest.job_id!r} already ended "
                               f"({latest.status.value}); nothing to cancel")
        ids = [r.id for r in requested]
        if not as_json:
            for record in requested:
                typer.echo(f"cancel requested: execution {record.id} of job {record.job_id}")
        records = _wait_final(store, ids, wait_limit) if wait else [
            store.get_execution(i) or r for i, r in zip(ids, requested, strict=True)]
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except NotFoundError:
        raise
    finally:
        if store is not None:
            store.close()
    exit_code = 0
    if wait:
        for record in records:
            if not record.status.is_final:
                exit_code = 1
                message = f"execution {record.id}: still {record.status.value} after {timeout}"
            elif record.status.value != "cancelled":
                exit_code = 1
                message = (f"execution {record.id} ended as {record.status.value} before the "
                           "cancel took effect")
            else:
                message = f"execution {record.id}: cancelled"
            if not as_json:
                typer.echo(message, err=exit_code != 0)
    if as_json:
        typer.echo(json.dumps(cancel_document(records), indent=2))
    if exit_code:
        raise typer.Exit(exit_code)


def register(app: typer.Typer) -> None:
    app.command("cancel")(cancel)
