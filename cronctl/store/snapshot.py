"""The JSON snapshot of a job definition kept in the schedules table (stdlib only).

It is informational (``status``, ``list`` from another process, debugging); the
scheduler always schedules from the live, validated definitions."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime, timedelta
from typing import Any

from cronctl.jobs.calendar import Calendar
from cronctl.jobs.model import AfterEdge, CommandTarget, JobDefinition
from cronctl.jobs.notify import NotifySpec


def _plain(value: Any) -> Any:
    if type(value) in _AS_IS:  # most fields: no isinstance chain (Mapping's is slow)
        return value
    if isinstance(value, NotifySpec):
        return value.redacted()  # header values are secrets
    if isinstance(value, Calendar | AfterEdge):
        return value.name if isinstance(value, Calendar) else str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def definition_snapshot(job: JobDefinition) -> dict[str, Any]:
    """A JSON-safe dict of ``job``: enums as values, durations as seconds, the target as
    its text (plus ``argv``/``shell``/``cwd`` for commands; ``env`` values are left out
    since they may hold secrets)."""
    out: dict[str, Any] = {}
    for name in _JOB_FIELDS:
        if name == "target":
            continue
        out[name] = _plain(getattr(job, name))
    target = job.target
    out["target"] = str(target)
    if isinstance(target, CommandTarget):
        out["command"] = {"argv": list(target.argv), "shell": target.shell, "cwd": target.cwd}
    out["schedule"] = job.schedule_text
    return out


def dumps(snapshot: Mapping[str, Any]) -> str:
    """Canonical JSON text (sorted keys) so unchanged definitions compare equal. What
    JSON cannot hold as it is goes through :func:`_plain` (a snapshot is plain already:
    walking it a second time was most of a 10,000-job start-up's snapshot cost)."""
    return json.dumps(snapshot, sort_keys=True, separators=(",", ":"), default=_default)


def _default(value: Any) -> Any:
    plain = _plain(value)
    return str(plain) if plain is value else plain


_JOB_FIELDS = tuple(f.name for f in fields(JobDefinition))
_AS_IS = frozenset({str, int, float, bool, type(None)})


__all__ = ["definition_snapshot", "dumps"]
