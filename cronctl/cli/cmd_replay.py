"""``cronctl replay JOB --since T [--until T] [--max N] [--dry-run]``: queue the planned
occurrences of a past window that never ran (``origin = replay``), oldest first.

Never twice: an occurrence that already has an execution row (any status, any attempt,
any origin) or a replay request is "already handled" and is not queued again. The store
keeps at most one replay request per (job, instant), so two operators replaying the same
window at once still queue each occurrence once. The requests go through the database to
a running scheduler (any node that has the job; exactly one takes each); without a live
scheduler they wait for the next ``cronctl run``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli import argtypes
from cronctl.cli.options import global_options
from cronctl.cli.shared import (
    complete_job_ids,
    iso_z,
    open_for_writing,
    open_state,
    require_database,
)
from cronctl.errors import UsageError

if TYPE_CHECKING:
    from cronctl.cron import Schedule
    from cronctl.store.base import Store

DEFAULT_MAX = 100
CHUNK = 1000  # planned instants looked up per round trip
SCAN_LIMIT = 100_000  # planned instants examined at most (a per-second job over days)
SHOW_HANDLED = 10  # already-handled occurrences listed one per line in the text output

EXECUTED = "executed"
REQUESTED = "requested"


@dataclass(frozen=True)
class Occurrence:
    scheduled_at: datetime
    occurrence_id: str
    request: int | None = None  # the replay request id once queued
    handled: str | None = None  # EXECUTED / REQUESTED when skipped

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"scheduled_at": iso_z(self.scheduled_at),
                               "occurrence_id": self.occurrence_id}
        if self.handled is not None:
            doc["reason"] = self.handled
        else:
            doc["request"] = self.request
        return doc


@dataclass(frozen=True)
class Plan:
    """What replay found in the window: to queue (at most ``--max``), already handled, and
    how many unhandled ones ``--max`` left out (``scan_truncated``: at least that many)."""

    queue: Sequence[Occurrence]
    handled: Sequence[Occurrence]
    left_out: int
    scan_truncated: bool


Handled = Callable[[Sequence[datetime]], dict[datetime, str]]
"""Given planned instants (oldest first), which are already handled and why."""


def plan(job_id: str, schedule: Schedule, since: datetime, until: datetime, limit: int,
         handled: Handled) -> Plan:
    """The planned instants of ``(since, until]``, oldest first, split into those to queue
    (the first ``limit`` unhandled ones), the handled ones and a count of the rest."""
    from cronctl.ids import occurrence_id

    queue: list[Occurrence] = []
    skipped: list[Occurrence] = []
    left_out = 0
    scanned = 0
    cursor = since
    while scanned < SCAN_LIMIT:
        chunk = schedule.between(cursor, until, limit=min(CHUNK, SCAN_LIMIT - scanned))
        if not chunk:
            break
        scanned += len(chunk)
        done = handled(chunk)
        for at in chunk:
            occurrence = Occurrence(at, occurrence_id(job_id, at), handled=done.get(at))
            if occurrence.handled is not None:
                skipped.append(occurrence)
            elif len(queue) < limit:
                queue.append(occurrence)
            else:
                left_out += 1
        cursor = chunk[-1]
    truncated = scanned >= SCAN_LIMIT and bool(schedule.between(cursor, until, limit=1))
    return Plan(queue, skipped, left_out, truncated)


def handled_in(store: Store | None, job_id: str) -> Handled:
    """Look up the instants of a chunk: one query for executions, one for requests."""
    from cronctl.ids import occurrence_id

    def lookup(chunk: Sequence[datetime]) -> dict[datetime, str]:
        if store is None:
            return {}
        first, last = chunk[0], chunk[-1]
        executed = {r.occurrence_id for r in store.list_executions(
            job_id=job_id, since=first, until=last, limit=None)}
        requested = _requested(store, job_id, first, last)
        out: dict[datetime, str] = {}
        for at in chunk:
            if occurrence_id(job_id, at) in executed:
                out[at] = EXECUTED
            elif at in requested:
                out[at] = REQUESTED
        return out

    return lookup


def _requested(store: Store, job_id: str, first: datetime, last: datetime) -> set[datetime]:
    """Instants in ``[first, last]`` that already have a replay request.

    The Store Protocol has no read of trigger requests, so this reads the table of the SQL
    store directly (read-only). It only makes ``--dry-run`` and the report exact: the
    store's unique (job, instant) request is what guarantees "never twice" when queueing.
    """
    engine = getattr(store, "engine", None)
    if engine is None:
        return set()
    import sqlalchemy as sa

    from cronctl.store.tables import trigger_requests

    t = trigger_requests.c
    query = sa.select(t.scheduled_at).where(
        t.job_id == job_id, t.scheduled_at.is_not(None), t.scheduled_at >= first,
        t.scheduled_at <= last)
    with engine.connect() as conn:
        return {at.astimezone(UTC) for at in conn.execute(query).scalars()}


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
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Queue the occurrences of JOB in (--since, --until] that never ran, oldest first."""
    from cronctl.config import load_config
    from cronctl.jobs.checks import job_schedule
    from cronctl.jobs.loader import find_job

    options = global_options(ctx)
    now = datetime.now(UTC)
    start, end = _window(since, until, now)
    config = load_config(options)
    definition = find_job(config.job_settings, job)  # NotFoundError: exit 3
    require_database(config, "'cronctl replay'")
    schedule = job_schedule(definition)
    # A dry run is read-only: a database that does not exist yet has no executions and no
    # requests (and is not created).
    store = open_state(options)[1] if dry_run else open_for_writing(config, "'cronctl replay'")
    try:
        result = plan(job, schedule, start, end, max_count, handled_in(store, job))
        queued: list[Occurrence] = []
        skipped = list(result.handled)
        live = True
        if not dry_run and result.queue:
            assert store is not None
            queued, raced = _enqueue(store, job, result.queue, now)
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
    if queued and not live:
        typer.echo("warning: no live scheduler right now; the requests wait until "
                   "'cronctl run' starts", err=True)
    if as_json:
        typer.echo(json.dumps({
            "job": job, "since": iso_z(start), "until": iso_z(end), "dry_run": dry_run,
            "queued": [o.to_json() for o in shown],
            "already_handled": [o.to_json() for o in skipped],
            "left_out": result.left_out, "left_out_at_least": result.scan_truncated,
        }, indent=2))
        return
    typer.echo(_text(job, dry_run, shown, skipped, result, max_count, start, end))


def _enqueue(store: Store, job: str, queue: Sequence[Occurrence], now: datetime
             ) -> tuple[list[Occurrence], list[Occurrence]]:
    """Queue each occurrence; one whose request appeared meanwhile (another replay) is
    reported as already requested."""
    from dataclasses import replace

    from cronctl.jobs.model import Origin

    queued: list[Occurrence] = []
    raced: list[Occurrence] = []
    for occurrence in queue:
        rid = store.enqueue_trigger(job, Origin.REPLAY, scheduled_at=occurrence.scheduled_at,
                                    now=now)
        if rid is None:
            raced.append(replace(occurrence, handled=REQUESTED))
        else:
            queued.append(replace(occurrence, request=rid))
    return queued, raced


def _text(job: str, dry_run: bool, shown: Sequence[Occurrence], skipped: Sequence[Occurrence],
          result: Plan, max_count: int, start: datetime, end: datetime) -> str:
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
