"""``cronctl spread [--window 24h] [--json]``: the busiest seconds of the coming window.

Counted exactly as the jobs will fire (docs/behaviour.md#spread-calendars-and-dependencies): each
enabled job's own schedule, the one ``next`` and the scheduler use, in its zone and with its DST
policies, ``H`` resolved with its id; interval jobs too. Planned instants, without jitter. Paused
flags live in the state database, which this command does not read: a paused job is counted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronctl.cli.options import global_options
from cronctl.cli.shared import check_all, iso_z
from cronctl.errors import UsageError

if TYPE_CHECKING:
    from cronctl.cron.busiest import FireCounts
    from cronctl.jobs.model import JobDefinition

_TOP = 10
_SHOWN_PEAK_JOBS = 10  # ids named in the plain output (--json lists them all)


def parse_window(text: str) -> timedelta:
    """``--window``: a duration from 1 s to 31 days; a bad one is a usage error."""
    from cronctl.cron.busiest import MAX_WINDOW
    from cronctl.durations import DurationError, parse_duration

    try:
        window = parse_duration(text, allow_zero=False)
    except DurationError as exc:
        raise UsageError(f"--window: {exc}") from None
    if window < timedelta(seconds=1):
        raise UsageError(f"--window: {text!r} is shorter than 1s")
    if window > MAX_WINDOW:
        raise UsageError(f"--window: {text!r} is longer than {MAX_WINDOW.days}d, the longest "
                         "window counted")
    return window


def spread(jobs: Sequence[JobDefinition], now: datetime, window: timedelta
           ) -> tuple[FireCounts, list[str]]:
    """The fire counts of the enabled ``jobs`` in ``(now, now + window]`` (``now`` cut to
    its second), and the ids of the jobs that fire in the peak second."""
    from cronctl.cron.busiest import count_fires
    from cronctl.jobs.checks import job_schedule

    after = now.astimezone(UTC).replace(microsecond=0)
    schedules = [(job.id, job_schedule(job)) for job in jobs if job.enabled]
    counts = count_fires((s for _, s in schedules), after, after + window, top=_TOP)
    peak = counts.peak
    at_peak: list[str] = []
    if peak is not None:
        # [peak, peak + 1 s): an interval fire off the second counts in its second
        tick = timedelta(microseconds=1)
        start, end = peak.at - tick, peak.at + timedelta(seconds=1) - tick
        at_peak = sorted(job_id for job_id, schedule in schedules
                         if next(schedule.fire_seconds(start, end), None) is not None)
    return counts, at_peak


def to_json(counts: FireCounts, window_text: str, at_peak: Sequence[str]) -> dict[str, Any]:
    peak = counts.peak
    return {
        "window": window_text,
        "from": iso_z(counts.after),
        "until": iso_z(counts.until),
        "jobs": counts.schedules,
        "fires": counts.fires,
        "peak": None if peak is None else {"at": iso_z(peak.at), "fires": peak.fires,
                                           "jobs": list(at_peak)},
        "busiest": [{"at": iso_z(b.at), "fires": b.fires} for b in counts.busiest],
    }


def render_plain(counts: FireCounts, window_text: str, at_peak: Sequence[str]) -> list[str]:
    seconds = max((counts.until - counts.after).total_seconds(), 1.0)
    lines = [
        f"window:  {window_text}: {iso_z(counts.after)} .. {iso_z(counts.until)}",
        f"jobs:    {counts.schedules}",
        f"fires:   {counts.fires} ({counts.fires / seconds:.3g} a second on average)",
    ]
    peak = counts.peak
    if peak is None:
        lines.append("peak:    none (no fire in the window)")
        return lines
    names = ", ".join(at_peak[:_SHOWN_PEAK_JOBS])
    if len(at_peak) > _SHOWN_PEAK_JOBS:
        names += f", … ({len(at_peak) - _SHOWN_PEAK_JOBS} more)"
    lines.append(f"peak:    {peak.fires} fire{'s' if peak.fires != 1 else ''} at "
                 f"{iso_z(peak.at)}: {names}")
    return lines


def spread_command(
    ctx: typer.Context,
    window: Annotated[str, typer.Option(
        "--window", metavar="DURATION",
        help="How far ahead to count, from now: 90s, 6h, 7d (at most 31d).")] = "24h",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Show the busiest seconds of the coming window, counted as the jobs will fire."""
    from cronctl.cli.tables import Column, Output, Row, Table

    options = global_options(ctx)
    length = parse_window(window)
    now = datetime.now(UTC)  # the CLI edge is where the clock is read
    checked = check_all(options, now=now)
    if checked.violations:
        for violation in checked.violations:
            typer.echo(str(violation), err=True)
        typer.echo(f"error: {len(checked.violations)} violation(s); fix them (see "
                   "'cronctl validate') before counting fires", err=True)
        raise typer.Exit(1)
    counts, at_peak = spread(checked.result.jobs, now, length)
    window_text = window.strip()
    if as_json:
        typer.echo(json.dumps(to_json(counts, window_text, at_peak), indent=2))
        return
    output = Output(color=options.color)
    for line in render_plain(counts, window_text, at_peak):
        output.line(line)
    if counts.busiest:
        output.line()
        output.table(Table((Column("BUSIEST SECOND (UTC)"), Column("FIRES")), tuple(
            Row((iso_z(b.at), str(b.fires))) for b in counts.busiest)))


def register(app: typer.Typer) -> None:
    app.command("spread")(spread_command)
