"""The shapes several documents share: instants as ISO 8601 ``Z`` strings, one execution
(the ``history --json`` shape), one job log line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.store.base import ExecutionRecord, LogLine
    from cronctl.views import shapes


@overload
def iso_z(t: datetime) -> str: ...


@overload
def iso_z(t: None) -> None: ...


@overload
def iso_z(t: datetime | None) -> str | None: ...


def iso_z(t: datetime | None) -> str | None:
    """Aware datetime as ISO 8601 UTC with ``Z`` (``None`` stays ``None``)."""
    if t is None:
        return None
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def shown_max_rss(record: ExecutionRecord) -> int | None:
    """Not shown yet (``None``): ``wait4`` reports the peak of the scheduler's own memory
    for every command it starts, since Linux carries the forking process's peak across
    ``exec`` into the child's (51 MB for ``du``). A wrong figure is worse than none; the
    stored value stays for when the peak is measured in the job's own process."""
    del record
    return None


def execution_json(record: ExecutionRecord) -> shapes.Execution:
    """The stable ``history --json`` shape of one execution."""
    return {
        "id": record.id,
        "job": record.job_id,
        "occurrence_id": record.occurrence_id,
        "scheduled_at": iso_z(record.scheduled_at),
        "started_at": iso_z(record.started_at),
        "finished_at": iso_z(record.finished_at),
        "status": record.status.value,
        "attempt": record.attempt,
        "node": record.node_id,
        "origin": record.origin.value,
        "error": record.error,
        # how a command ended and what it used (docs/behaviour.md#sandbox-and-output); null for
        # Python handlers
        "exit_code": record.exit_code,
        "signal": record.signal,
        "cpu_seconds": record.cpu_seconds,
        "max_rss_bytes": shown_max_rss(record),
        # a final status that came after the attempt was taken over: kept, not counted
        "fenced_status": None if record.fenced_status is None else record.fenced_status.value,
        "fenced_at": iso_z(record.fenced_at),
    }


def rows_json(key: str, rows: Sequence[Mapping[str, object]]) -> str:
    """``{key: rows}`` as JSON text with one row per line. ``json.dumps(indent=2)`` runs
    the pure-Python encoder: 100,000 jobs took seconds; each row through the C encoder
    takes microseconds, and the document stays readable and line-oriented."""
    import json

    if not rows:
        return json.dumps({key: []}, indent=2)
    body = ",\n    ".join(json.dumps(row, ensure_ascii=True) for row in rows)
    return f"{{\n  {json.dumps(key)}: [\n    {body}\n  ]\n}}"


def fenced_note(record: ExecutionRecord) -> str | None:
    """What ``history`` and ``why`` say of a final status refused as stale
    (docs/behaviour.md#durability-and-clusters): ``attempt 1 on node-a: succeeded after another node
    took the attempt over; not counted``."""
    if record.fenced_status is None:
        return None
    return (f"attempt {record.attempt} on {record.node_id}: {record.fenced_status.value} "
            "after another node took the attempt over; not counted")


def line_json(line: LogLine) -> shapes.LogLine:
    """One job log line (``logs --json``)."""
    return {"seq": line.seq, "at": iso_z(line.at), "level": line.level, "message": line.message}


def require_job_defined(config: Config, job_id: str) -> None:
    """:class:`NotFoundError` (exit 3) unless some source defines ``job_id``."""
    from cronctl.errors import ConfigError, NotFoundError
    from cronctl.jobs.loader import find_job

    try:
        find_job(config.job_settings, job_id, state_dir=config.state_dir)
    except ConfigError:
        return  # defined, just invalid: it exists
    except NotFoundError:
        raise
