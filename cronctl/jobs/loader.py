"""``load_jobs``: every source, precedence, validation — one call, every violation.

Precedence, highest first: the job's ``[jobs.<id>]`` TOML table, the ``@cron_job``
decorator, the mode-based defaults. A TOML table whose id matches a decorated job
overrides it key by key; ``cron``/``every`` (with ``anchor``) count as one key, and so do
``target``/``command``, so a table can swap the schedule or the target of a decorated job.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cronctl.errors import ConfigError, NotFoundError
from cronctl.heap import collector_paused
from cronctl.jobs.build import BuildContext, RawJob, build_job, check_id
from cronctl.jobs.calendar_tables import build_calendars
from cronctl.jobs.checks import clear_python_cache
from cronctl.jobs.dependencies import resolve_dependents
from cronctl.jobs.model import Isolation, JobDefinition
from cronctl.jobs.registry import ServiceRegistry, discover_services, set_default_registry
from cronctl.jobs.settings import JobSettings
from cronctl.jobs.toml_source import TomlJob, read_jobs_dir
from cronctl.jobs.violation import Violation, did_you_mean, display_path
from cronctl.trust import install_guard, untrusted

_SCHEDULE_KEYS = ("cron", "every", "anchor")
_TARGET_KEYS = ("target", "command")


@dataclass(frozen=True)
class LoadResult:
    """The validated jobs (empty when any violation exists: nothing is registered then),
    every violation, every warning, and how many job definitions were seen.

    ``valid``: the jobs that validated, also when others did not. A scheduler refuses a
    set with violations (at start) or keeps its last good one (on SIGHUP), so one typo
    in one file must not make the commands and pages that only *show* jobs say there
    are none: they show these beside the violations (``jobs`` when there are none)."""

    jobs: tuple[JobDefinition, ...]
    violations: tuple[Violation, ...]
    warnings: tuple[Violation, ...]
    defined: int = 0
    valid: tuple[JobDefinition, ...] = ()

    @property
    def shown(self) -> tuple[JobDefinition, ...]:
        """What a read-only view lists: every job when the set is valid, else the jobs
        that validated (see ``valid``)."""
        return self.jobs if not self.violations else self.valid

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def enabled_jobs(self) -> tuple[JobDefinition, ...]:
        """What the scheduler fires: jobs with ``enabled = true``."""
        return tuple(job for job in self.jobs if job.enabled)


@dataclass(frozen=True)
class _Loaded:
    built: dict[str, JobDefinition]
    failed: dict[str, list[Violation]]
    violations: list[Violation]
    warnings: list[Violation]
    registry: ServiceRegistry
    defined: int
    dependent: bool = False  # an ``only`` load found a dependent: it needs its parents


def load_jobs(
    settings: JobSettings,
    *,
    now: datetime | None = None,
    registry: ServiceRegistry | None = None,
    state_dir: Path | None = None,
) -> LoadResult:
    """Load and validate every job: the TOML files of ``settings.jobs_dir`` and the
    ``@cron_job`` operations of the ``cronctl.services`` entry points.

    ``now`` (default: the clock) is where "never fires within 4 years" is measured from;
    ``registry`` replaces entry-point discovery (tests). On success the registry becomes
    the one :func:`cronctl.jobs.registry.resolve_operation` uses. ``state_dir``: given by
    the commands that only show the jobs, never ``validate`` or ``run``; a path without
    service entry points is remembered there (:mod:`cronctl.jobs.pathscan`).
    """
    loaded = _load(settings, now=now, registry=registry, state_dir=state_dir)
    if loaded.violations:
        valid = tuple(sorted((job for job in loaded.built.values()
                              if job.id not in loaded.failed), key=lambda job: job.id))
        return LoadResult((), tuple(loaded.violations), tuple(loaded.warnings), loaded.defined,
                          valid)
    set_default_registry(loaded.registry)
    jobs = tuple(sorted(loaded.built.values(), key=lambda job: job.id))
    return LoadResult(jobs, (), tuple(loaded.warnings), loaded.defined)


def find_job(settings: JobSettings, job_id: str, *, now: datetime | None = None,
             state_dir: Path | None = None) -> JobDefinition:
    """The job named ``job_id``. :class:`NotFoundError` (exit 3, with a did-you-mean) when
    no source defines it; :class:`ConfigError` when that job itself is invalid. Problems
    of other jobs do not matter here, so only the files that can define it are read and
    only it is built; a job that none of them defines is looked for among all jobs, for
    the did-you-mean. ``state_dir``: as for :func:`load_jobs`."""
    loaded = _load(settings, now=now, registry=None, only=job_id, state_dir=state_dir)
    if loaded.dependent:  # its parents' definitions decide it: read every job
        loaded = _load(settings, now=now, registry=None, state_dir=state_dir)
    job = loaded.built.get(job_id)
    if job is not None:
        return job
    if job_id not in loaded.failed:
        loaded = _load(settings, now=now, registry=None, state_dir=state_dir)
    if job_id in loaded.failed:
        problems = loaded.failed[job_id]
        more = f" (and {len(problems) - 1} more; run 'cronctl validate')" if len(
            problems) > 1 else ""
        raise ConfigError(f"job {job_id!r} is invalid: {problems[0]}{more}")
    known = [*loaded.built, *loaded.failed]
    raise NotFoundError(f"no job {job_id!r}{did_you_mean(job_id, known)}")


def importable_from(base_dir: Path) -> None:
    """``python:`` targets (and service packages, whose entry points are found on the
    same path) also load from ``[scheduler] python_path`` and the config file's directory
    (a module next to ``cronctl.toml``), after ``PYTHONPATH`` and the installed packages,
    which keep precedence: appended, never prepended, so a local file cannot shadow a
    package."""
    path = str(base_dir.resolve())
    if path not in sys.path:
        sys.path.append(path)


def _load(settings: JobSettings, *, now: datetime | None, registry: ServiceRegistry | None,
          only: str | None = None, state_dir: Path | None = None) -> _Loaded:
    """``only``: build that job alone (and read only the files that can define it)."""
    with collector_paused():
        return _load_sources(settings, now=now, registry=registry, only=only,
                             state_dir=state_dir)


def _load_sources(settings: JobSettings, *, now: datetime | None,
                  registry: ServiceRegistry | None, only: str | None,
                  state_dir: Path | None) -> _Loaded:
    now = now if now is not None else datetime.now(UTC)
    # Before anything of a job or a service is imported: every file an import runs from
    # here on is judged first (docs/trust.md).
    install_guard()
    distrusted: list[Violation] = []
    for directory in (*settings.python_path, settings.base_dir):
        distrust = untrusted(directory, "python_path directory")
        if distrust is not None:
            if directory in settings.python_path:  # (the config's own: checked with it)
                distrusted.append(Violation(display_path(directory), None, None, distrust))
            continue  # never on sys.path
        importable_from(directory)
    clear_python_cache()
    if registry is None:
        registry = discover_services(remember_in=state_dir)
    files = read_jobs_dir(settings.jobs_dir, required=settings.jobs_dir_required, only=only)
    violations: list[Violation] = [*distrusted, *registry.violations, *files.violations]
    raws: list[RawJob] = []

    decorated: dict[str, RawJob] = {}
    for dj in registry.cron_jobs:
        values: dict[str, Any] = dict(dj.spec.values)
        job_id = values.pop("id", None)
        values["target"] = f"service:{dj.operation_id}"
        raw = RawJob(id=job_id, values=values, sources=dict.fromkeys(values, dj.where),
                     source=dj.where, from_toml=False)
        if check_id(job_id) is not None:
            raws.append(raw)  # reported by build_job
        elif job_id in decorated:
            violations.append(Violation(dj.where, job_id, None,
                                        f"duplicate id {job_id!r}: also used by "
                                        f"{decorated[job_id].source}"))
        else:
            decorated[job_id] = raw

    tables: dict[str, TomlJob] = {}
    for table in files.jobs:
        if table.id in tables:
            violations.append(Violation(table.source, table.id, None,
                                        f"duplicate id {table.id!r}: also defined at "
                                        f"{tables[table.id].source}"))
        else:
            tables[table.id] = table

    for job_id, raw in decorated.items():
        twin = tables.pop(job_id, None)
        raws.append(raw if twin is None else _override(raw, twin))
    for table in tables.values():
        raws.append(RawJob(id=table.id, values=table.values, sources=table.key_sources,
                           source=table.source, days_or=table.days_or))

    calendars, bad_calendars, problems = build_calendars(
        (*settings.calendar_tables, *files.calendars))
    violations.extend(problems)
    ctx = BuildContext(
        now=now,
        registry=registry,
        memory_database=settings.memory_database,
        tracked_default=settings.tracked_default,
        output_limit_default=settings.output_limit_default,
        isolation_default=Isolation(settings.isolation_default),
        base_dir=settings.base_dir,
        calendars=calendars,
        bad_calendars=frozenset(bad_calendars),
    )
    built: dict[str, JobDefinition] = {}
    failed: dict[str, list[Violation]] = {}
    warnings: list[Violation] = [*files.warnings]
    for raw in raws:
        if only is not None and raw.id != only:
            continue
        result = build_job(raw, ctx)
        violations.extend(result.violations)
        warnings.extend(result.warnings)
        if result.job is not None:
            built[result.job.id] = result.job
        elif isinstance(raw.id, str):
            failed[raw.id] = result.violations
    after_sources = {raw.id: raw.sources.get("after", raw.source) for raw in raws
                     if isinstance(raw.id, str)}
    explicit = {raw.id for raw in raws if isinstance(raw.id, str) and (
        "mode" in raw.values or "overlap_policy" in raw.values)}
    for job_id, problems in resolve_dependents(built, failed, sources=after_sources,
                                               explicit_mode=explicit).items():
        violations.extend(problems)
        failed[job_id] = problems
    violations.sort(key=_source_order)
    warnings.sort(key=_source_order)
    dependent = only is not None and any(raw.id == only and "after" in raw.values
                                         for raw in raws)
    return _Loaded(built, failed, violations, warnings, registry, len(raws), dependent)


def _source_order(violation: Violation) -> tuple[str, int]:
    """Files in name order, then by line; Python objects (no line) sort by name."""
    path, _, line = violation.source.rpartition(":")
    # isdecimal, not isdigit: "²" is a digit that int() refuses (a fuzzed --jobs-dir).
    return (path, int(line)) if line.isdecimal() else (violation.source, 0)


def _override(decorated: RawJob, table: TomlJob) -> RawJob:
    """The TOML table over the decorator, key by key (schedule and target as units)."""
    values = dict(decorated.values)
    sources = dict(decorated.sources)
    for group in (_SCHEDULE_KEYS, _TARGET_KEYS):
        if any(key in table.values for key in group):
            for key in group:
                values.pop(key, None)
                sources.pop(key, None)
    values.update(table.values)
    sources.update(table.key_sources)
    return RawJob(id=decorated.id, values=values, sources=sources, source=table.source,
                  days_or=table.days_or)
