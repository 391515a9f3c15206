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

from cronctl.jobs.model import CommandTarget, JobDefinition
from cronctl.jobs.notify import NotifySpec


def _plain(value: Any) -> Any:
    if isinstance(value, NotifySpec):
        return value.redacted()  # header values are secrets
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
    for f in fields(job):
        if f.name == "target":
            continue
        out[f.name] = _plain(getattr(job, f.name))
    target = job.target
    out["target"] = str(target)
    if isinstance(target, CommandTarget):
        out["command"] = {"argv": list(target.argv), "shell": target.shell, "cwd": target.cwd}
    out["schedule"] = job.schedule_text
    return out


def dumps(snapshot: Mapping[str, Any]) -> str:
    """Canonical JSON text (sorted keys) so unchanged definitions compare equal."""
    return json.dumps(_plain(snapshot), sort_keys=True, separators=(",", ":"), default=str)


__all__ = ["definition_snapshot", "dumps"]
