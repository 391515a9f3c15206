"""The shapes several documents share: instants as ISO 8601 ``Z`` strings, one execution
(the ``history --json`` shape), one job log line."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.store.base import ExecutionRecord, LogLine


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


def execution_json(record: ExecutionRecord) -> dict[str, Any]:
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
    }


def line_json(line: LogLine) -> dict[str, Any]:
    """One job log line (``logs --json``)."""
    return {"seq": line.seq, "at": iso_z(line.at), "level": line.level, "message": line.message}


def require_job_defined(config: Config, job_id: str) -> None:
    """:class:`NotFoundError` (exit 3) unless some source defines ``job_id``."""
    from cronctl.errors import ConfigError, NotFoundError
    from cronctl.jobs.loader import find_job

    try:
        find_job(config.job_settings, job_id)
    except ConfigError:
        return  # defined, just invalid: it exists
    except NotFoundError:
        raise
