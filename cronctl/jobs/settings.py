"""``JobSettings``: what loading the jobs needs to know about the scheduler's setup.

The loader takes these plain values rather than the whole configuration, so ``jobs/``
never imports :mod:`cronctl.config` (the configuration builds one: ``Config.job_settings``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cronctl.jobs.calendar_tables import RawCalendar


@dataclass(frozen=True)
class JobSettings:
    """Where the job files are and the scheduler-wide facts the jobs are checked against.

    ``base_dir`` is what relative paths in job files are relative to (the config file's
    directory); ``jobs_dir_required`` is False for the default ``jobs.d``, whose absence
    is only a warning; ``memory_database`` (``database = "none"``) allows every-instance
    jobs only; ``tracked_default`` is ``[scheduler] tracked``; ``python_path`` lists extra
    directories that ``python:`` modules and service packages (with their entry points)
    are loaded from.
    """

    jobs_dir: Path
    base_dir: Path
    jobs_dir_required: bool = True
    memory_database: bool = False
    tracked_default: bool = True
    output_limit_default: int = 1024 * 1024  # [scheduler] output_limit
    isolation_default: str = "process"  # [scheduler] isolation (Python targets)
    python_path: tuple[Path, ...] = ()
    calendar_tables: tuple[RawCalendar, ...] = ()  # cronctl.toml's [calendars.NAME]
