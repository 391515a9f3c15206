"""``cronctl replay JOB --since T [--until T] [--max N] [--dry-run]``: queue the planned
occurrences of a past window that never ran (``origin = replay``), oldest first.

Never twice: an occurrence that already has an execution row or a replay request is
"already handled" and is not queued again (the planning and the rule:
:mod:`cronctl.store.replay`; this module parses, calls it and renders). The requests go
through the database to a running scheduler (any node that has the job; exactly one takes
each); without a live scheduler they wait for the next ``cronctl run``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    chain_for,
    complete_job_ids,
    iso_z,
    open_for_writing,
    open_state,
    require_database,
)
from cronctl.errors import UsageError

if TYPE_CHECKING:
    from cronctl.store.replay import Occurrence, Plan

DEFAULT_MAX = 100
# = cronctl.store.replay.SCAN_LIMIT (a test checks): the store is not imported until the
# command runs (cli/app.py).
SCAN_LIMIT = 100_000
_TICK = timedelta(microseconds=1)
SHOW_HANDLED = 10  # already-handled occurrences listed one per line in the text output


def _occurrence_json(o: Occurrence) -> dict[str, Any]:
    doc: dict[str, Any] = {"scheduled_at": iso_z(o.scheduled_at),
                           "occurrence_id": o.occurrence_id}
    if o.handled is not None:
        doc["reason"] = o.handled
    else:
        doc["request"] = o.request
    return doc


def _window(since: str, until: str | None, now: datetime) -> tuple[datetime, datetime]:
    from cronctl.cli.argtypes import parse_time

    start = parse_time(since, now, what="--since")
    end = parse_time(until, now, what="--until") if until is not None else now
    if end > now:
        raise UsageError(f"--until {iso_z(end)} is in the future; replay only queues "
                         "occurrences that are already due (future ones fire on their own)")
    if start >= end:
        raise UsageError(f"--since {iso_z(start)} must be before --until {iso_z(end)}")
    return start, end


def replay(
    ctx: typer.Context,
    job: Annotated[str, typer.Argument(
        help="The job whose missed occurrences to queue.", autocompletion=complete_job_ids)],
    since: Annotated[str, typer.Option(
        "--since", help="Window start (exclusive): ISO 8601 or relative (2h, 3d).")],
    until: Annotated[str | None, typer.Option(
        "--until", help="Window end (inclusive), default now: ISO 8601 or relative.")] = None,
    max_count: Annotated[int, typer.Option(
        "--max", parser=argtypes.count("--max", maximum=SCAN_LIMIT),
        help="Queue at most N occurrences (the oldest).")] = DEFAULT_MAX,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show what would be queued; write nothing.")] = False,
    chain: Annotated[bool, typer.Option(
        "--chain", help="Also run the jobs that depend on JOB (after = [...]) for each "
        "queued occurrence, once it has ended as they require.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Queue the occurrences of JOB in (--since, --until] that never ran, oldest first."""
    from cronctl.config import load_config
    from cronctl.jobs.checks import job_schedule
    from cronctl.jobs.loader import find_job
    from cronctl.store.replay import enqueue, handled_in, plan

    options = global_options(ctx)
    now = datetime.now(UTC)
    start, end = _window(since, until, now)
    config = load_config(options)
    definition = find_job(config.job_settings, job)  # NotFoundError: exit 3
    require_database(config, "'cronctl replay'")
    chained = chain_for(config, job) if chain else []
    schedule = job_schedule(definition)
    # A dry run is read-only: a database that does not exist yet has no executions and no
    # requests (and is not created).
    store = open_state(options)[1] if dry_run else open_for_writing(config, "'cronctl replay'")
    try:
        state = store.get_schedule(job) if store is not None else None
        first_seen = state.first_seen if state is not None else None
        # Nothing of the job was planned before a scheduler first had it: offer nothing
        # from before (the window starts just before first_seen, since it is exclusive).
        begin = start if first_seen is None else max(start, first_seen - _TICK)
        result = plan(job, schedule, begin, end, max_count, handled_in(store, job))
        queued: list[Occurrence] = []
        skipped = list(result.handled)
        live = True
        if not dry_run and result.queue:
            assert store is not None
            queued, raced = enqueue(store, job, result.queue, now)
            for o in queued:  # their dependents wait for the replayed executions
                for dependent in chained:
                    store.wait_chain(dependent, o.scheduled_at, now=now)
            skipped = sorted([*skipped, *raced], key=lambda o: o.scheduled_at)
            live = bool(store.live_nodes(now, config.heartbeat_interval * 3))
    finally:
        if store is not None:
            store.close()
    shown = list(result.queue) if dry_run else queued
    if not definition.tracked:
        typer.echo(f"warning: job {job} is untracked (tracked = false): its executions are "
                   "not recorded, so only earlier replay requests count as handled",
                   err=True)
    if first_seen is not None and first_seen > start:
        typer.echo(f"note: job {job} was first scheduled at {iso_z(first_seen)}: nothing "
                   "before that is offered", err=True)
    if queued and not live:
        typer.echo("warning: no live scheduler right now; the requests wait until "
                   "'cronctl run' starts", err=True)
    if as_json:
        typer.echo(json.dumps({
            "job": job, "since": iso_z(start), "until": iso_z(end), "dry_run": dry_run,
            "first_scheduled": iso_z(first_seen),
            "queued": [_occurrence_json(o) for o in shown],
            "already_handled": [_occurrence_json(o) for o in skipped],
            "left_out": result.left_out, "left_out_at_least": result.scan_truncated,
            "chained": chained,
        }, indent=2))
        return
    typer.echo(_text(job, dry_run, shown, skipped, result, max_count, start, end))
    if chained and shown:
        typer.echo(f"{'would chain' if dry_run else 'chained'}: {', '.join(chained)} run "
                   f"after each, at the same instant (origin dependency)")


def _text(job: str, dry_run: bool, shown: Sequence[Occurrence], skipped: Sequence[Occurrence],
          result: Plan, max_count: int, start: datetime, end: datetime) -> str:
    from cronctl.store.replay import EXECUTED

    lines: list[str] = []
    verb = "would queue" if dry_run else "queued"
    for o in shown:
        request = "" if o.request is None else f" (request {o.request})"
        lines.append(f"{verb}: {iso_z(o.scheduled_at)}{request}")
    for o in skipped[:SHOW_HANDLED]:
        why = "has an execution" if o.handled == EXECUTED else "already requested"
        lines.append(f"already handled: {iso_z(o.scheduled_at)} ({why})")
    if len(skipped) > SHOW_HANDLED:
        lines.append(f"already handled: ... {len(skipped) - SHOW_HANDLED} more (see --json)")
    window = f"({iso_z(start)}, {iso_z(end)}]"
    counted = "would be queued" if dry_run else "queued"
    queued = f"{len(shown)} {counted}" if shown else "nothing to queue"
    summary = [f"job {job}, window {window}: {queued}", f"{len(skipped)} already handled"]
    if result.left_out:
        more = "at least " if result.scan_truncated else ""
        summary.append(f"{more}{result.left_out} more left out by --max {max_count}")
    elif result.scan_truncated:
        summary.append(f"stopped after {SCAN_LIMIT} planned occurrences; narrow the window")
    lines.append(", ".join(summary))
    if shown and not dry_run:
        lines.append("a running scheduler runs them oldest first (origin replay)")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
