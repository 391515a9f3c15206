"""Jobs: the model, TOML loading, entry-point discovery, precedence and validation.

The entry points other layers use are :func:`load_jobs`, :func:`find_job`,
:func:`job_schedule` and :func:`resolve_operation` (``load_jobs`` and ``find_job`` take a
:class:`JobSettings`, which ``Config.job_settings`` builds); they are imported lazily so that
importing :mod:`cronctl.jobs.model` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cronctl import lazy

if TYPE_CHECKING:
    from cronctl.jobs.checks import job_schedule
    from cronctl.jobs.loader import LoadResult, find_job, load_jobs
    from cronctl.jobs.registry import resolve_operation
    from cronctl.jobs.settings import JobSettings
    from cronctl.jobs.violation import Violation

__all__ = [
    "JobSettings", "LoadResult", "Violation", "find_job", "job_schedule", "load_jobs",
    "resolve_operation",
]

_HOMES = {
    "LoadResult": "cronctl.jobs.loader",
    "find_job": "cronctl.jobs.loader",
    "JobSettings": "cronctl.jobs.settings",
    "job_schedule": "cronctl.jobs.checks",
    "load_jobs": "cronctl.jobs.loader",
    "resolve_operation": "cronctl.jobs.registry",
    "Violation": "cronctl.jobs.violation",
}


__getattr__, __dir__ = lazy.exports(__name__, _HOMES, __all__)
