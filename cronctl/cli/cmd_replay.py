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
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from cronctl import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    JOB_OPTION_HELP,
    complete_job_ids,
    iso_z,
    one_job,
    open_for_writing,
    open_state,
    require_database,
)
from cronctl.errors import UsageError
from cronctl.views.actions import DEFAULT_MAX, chain_for, replay_window
from cronctl.views.actions import replay as run_replay

if TYPE_CHECKING:
    from cronctl.store.replay import Occurrence, Plan

# = cronctl.store.replay.SCAN_LIMIT (a test checks): the store is not imported until the
# command runs (cli/app.py).
SCAN_LIMIT = 100_000
SHOW_HANDLED = 10  # already-handled occurrences listed one per line in the text output


def replay(
    ctx: typer.Context,
    job: Annotated[str | None, typer.Argument(
        metavar="JOB", help="The job whose missed occurrences to queue.",
        autocompletion=complete_job_ids)] = None,
    job_option: Annotated[str | None, typer.Option(
        "--job", help=JOB_OPTION_HELP, autocompletion=complete_job_ids)] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="Window start (exclusive): ISO 8601 or relative (2h, 3d). "
        "Required.")] = None,
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
    from cronctl.jobs.loader import find_job

    options = global_options(ctx)
    job = one_job(job, job_option)
    if since is None:
        raise UsageError("missing option --since (the window's start: ISO 8601 or relative, "
                         "2h, 3d)")
    now = datetime.now(UTC)
    start = argtypes.parse_time(since, now, what="--since")
    end = argtypes.parse_time(until, now, what="--until") if until is not None else now
    replay_window(start, end, now)
    config = load_config(options)
    find_job(config.job_settings, job)  # NotFoundError: exit 3, before the database opens
    require_database(config, "'cronctl replay'")
    chained = chain_for(config, job) if chain else []
    # A dry run is read-only: a database that does not exist yet has no executions and no
    # requests (and is not created).
    store = (open_state(options, missing_ok=True)[1] if dry_run
             else open_for_writing(config, "'cronctl replay'"))
    try:
        done = run_replay(config, store, job, start, end, max_count=max_count,
                          dry_run=dry_run, now=now, chained=chained)
    finally:
        if store is not None:
            store.close()
    for warning in done.warnings:
        typer.echo(warning, err=True)
    if as_json:
        typer.echo(json.dumps(done.to_json(), indent=2))
        return
    typer.echo(_text(job, dry_run, done.shown, done.skipped, done.plan, max_count, start, end))
    if chained and done.shown:
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
