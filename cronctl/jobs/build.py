"""From raw key/values (TOML table over decorator arguments) to a :class:`JobDefinition`.

Every rule that concerns one job lives here or in :mod:`cronctl.jobs.checks`; each
problem becomes a :class:`Violation` naming the source of the offending key, and all of
them are collected before giving up on the job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cronctl.cron import CronExpression, CronSyntaxError, parse_cron
from cronctl.durations import MAX_DURATION, MAX_DURATION_TEXT
from cronctl.jobs import checks, sandbox
from cronctl.jobs.calendar import Calendar
from cronctl.jobs.convert import (
    JOB_KEY_ALIASES,
    JOB_KEYS,
    SIMPLE,
    BadValue,
    to_command,
    to_text,
)
from cronctl.jobs.model import (
    DEFAULT_AFTER_TIMEOUT,
    DEFAULT_KILL_TIMEOUT,
    DEFAULT_MISFIRE_THRESHOLD,
    DEFAULT_OUTPUT_LIMIT,
    DEFAULT_RETRY_BACKOFF,
    EPOCH,
    NO_JITTER,
    CommandTarget,
    DstFold,
    DstGap,
    Isolation,
    JobDefinition,
    Limits,
    MisfirePolicy,
    Mode,
    OverlapPolicy,
    PythonTarget,
    ServiceTarget,
    Target,
)
from cronctl.jobs.notify import NotifySpec, read_notify
from cronctl.jobs.registry import ServiceRegistry
from cronctl.jobs.violation import Violation, did_you_mean

ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,200}")
MAX_SECONDS = MAX_DURATION.total_seconds()
_COMMAND_ONLY = ("shell", "env", "cwd", "user", "group", "limits")
_NO_LIMITS = Limits()
_OWN_SCHEDULE = ("cron", "every", "anchor", "timezone", "dst_gap", "dst_fold")
_SCHEDULE_INPUTS = frozenset({"cron", "every", "anchor", "timezone", "dst_gap", "dst_fold",
                              "timeout", "misfire_policy"})


@dataclass(frozen=True)
class RawJob:
    """One job's keys as merged from its sources; ``sources`` says where each came from."""

    id: Any
    values: Mapping[str, Any]
    sources: Mapping[str, str]
    source: str  # the [jobs.<id>] table, or the decorated method
    from_toml: bool = True
    days_or: bool = False  # both day fields restricted on purpose: no warning


@dataclass(frozen=True)
class BuildContext:
    now: datetime
    registry: ServiceRegistry
    memory_database: bool = False
    tracked_default: bool = True
    base_dir: Path = field(default_factory=Path.cwd)
    check_targets: bool = True
    output_limit_default: int = DEFAULT_OUTPUT_LIMIT  # [scheduler] output_limit
    isolation_default: Isolation = Isolation.PROCESS  # [scheduler] isolation
    calendars: Mapping[str, Calendar] = field(default_factory=dict)
    bad_calendars: frozenset[str] = frozenset()  # defined, but invalid (reported there)


@dataclass
class BuildResult:
    job: JobDefinition | None = None
    violations: list[Violation] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)


def check_id(job_id: Any) -> str | None:
    """Why ``job_id`` is not a valid id, or ``None``."""
    if job_id is None or (isinstance(job_id, str) and not job_id.strip()):
        return "missing or blank id"
    if not isinstance(job_id, str):
        return f"id must be a string, not {job_id!r}"
    if len(job_id) > 200:
        return f"id is {len(job_id)} characters long; at most 200 are allowed"
    if not ID_PATTERN.fullmatch(job_id):
        bad = sorted({c for c in job_id if not re.fullmatch(r"[A-Za-z0-9._-]", c)})
        shown = " ".join(repr(c) for c in bad)
        return f"id {job_id!r} may only hold letters, digits, '.', '_' and '-' (found {shown})"
    return None


def _retry_problem(conv: Mapping[str, Any], values: Mapping[str, Any]
                   ) -> tuple[str, str] | None:
    """The last retry waits ``retry_backoff * 2**(max_attempts - 2)``: it must stay within
    the 100-year bound of every duration (and of the clocks that wait for it)."""
    if "max_attempts" not in values and "retry_backoff" not in values:
        return None
    attempts: int = conv.get("max_attempts", 3)
    backoff: timedelta = conv.get("retry_backoff", DEFAULT_RETRY_BACKOFF)
    if attempts < 2 or backoff.total_seconds() * 2.0 ** (attempts - 2) <= MAX_SECONDS:
        return None
    fits = 2
    while backoff.total_seconds() * 2.0 ** (fits - 1) <= MAX_SECONDS:
        fits += 1
    key = "max_attempts" if "max_attempts" in values else "retry_backoff"
    return key, (f"retry_backoff doubles each attempt, so with max_attempts = {attempts} the "
                 f"last retry would wait more than {MAX_DURATION_TEXT}; with this "
                 f"retry_backoff use max_attempts <= {fits}")


def build_job(raw: RawJob, ctx: BuildContext) -> BuildResult:
    result = BuildResult()
    job_name = raw.id if isinstance(raw.id, str) and raw.id.strip() else None

    def violation(key: str | None, message: str) -> None:
        source = raw.sources.get(key.split(".")[0], raw.source) if key else raw.source
        result.violations.append(Violation(source, job_name, key, message))

    def warning(key: str | None, message: str) -> None:
        source = raw.sources.get(key, raw.source) if key else raw.source
        result.warnings.append(Violation(source, job_name, key, message))

    id_problem = check_id(raw.id)
    if id_problem:
        violation(None, id_problem)

    values = raw.values
    conv: dict[str, Any] = {}
    failed: set[str] = set()  # keys whose value could not be read
    for key, value in values.items():
        if key not in JOB_KEYS:
            violation(key, f"unknown key{did_you_mean(key, JOB_KEYS, JOB_KEY_ALIASES)}")
            continue
        convert = SIMPLE.get(key) or sandbox.SIMPLE.get(key)
        if convert is None:
            continue
        try:
            conv[key] = convert(value)
        except BadValue as exc:
            violation(key, str(exc))
            failed.add(key)

    notify: NotifySpec | None = None
    if "notify" in values:
        notify, problems = read_notify(values["notify"])
        for sub, message in problems:
            violation(f"notify.{sub}" if sub else "notify", message)

    limits = _NO_LIMITS  # (shared: most jobs set none, and reading {} costs ~5 us a job)
    if "limits" in values:
        limits, problems = sandbox.read_limits(values["limits"])
        for sub, message in problems:
            violation(f"limits.{sub}" if sub else "limits", message)

    # -- the schedule: exactly one of cron / every ---------------------------------------
    expression: CronExpression | None = None
    dependent = "after" in values
    if dependent:
        # A dependent runs on its parents' schedule (copied in by the loader).
        for key in _OWN_SCHEDULE:
            if key in values:
                violation(key, f"a dependent (after = [...]) runs at its parents' planned "
                               f"instants: remove '{key}'")
    elif "cron" in values and "every" in values:
        violation("every", "set either 'cron' or 'every', not both")
    elif "cron" not in values and "every" not in values:
        violation("cron", "no schedule: set 'cron' (e.g. \"0 */5 * * * *\") or 'every' "
                          "(e.g. \"90s\")")
    elif "cron" in values:
        try:
            # H (docs/behaviour.md#spread-calendars-and-dependencies) is resolved here, once, with
            # the job's own id.
            expression = parse_cron(to_text(values["cron"], blank_ok=False),
                                    raw.id if isinstance(raw.id, str) else None)
        except (BadValue, CronSyntaxError) as exc:
            violation("cron", str(exc))
            failed.add("cron")
        if "anchor" in values:
            violation("anchor", "'anchor' only applies to 'every' schedules")

    # -- the target: exactly one of target / command -------------------------------------
    target: Target | None = None
    if "target" in values and "command" in values:
        violation("command", "set either 'target' or 'command', not both")
    elif "target" not in values and "command" not in values:
        violation("target", "nothing to run: set 'target' (\"service:...\" or "
                            "\"python:module:function\") or 'command'")
    elif "command" in values:
        try:
            argv = to_command(values["command"], bool(conv.get("shell", False)))
        except BadValue as exc:
            violation("command", str(exc))
        else:
            cwd = conv.get("cwd")
            target = CommandTarget(
                argv=argv,
                shell=bool(conv.get("shell", False)),
                env=conv.get("env", {}),
                cwd=str((ctx.base_dir / cwd).absolute()) if cwd else None,
                user=conv.get("user"),
                group=conv.get("group"),
                limits=limits,
            )
            for kind, key, message in sandbox.check_identity(target.user, target.group):
                (violation if kind == "violation" else warning)(key, message)
    else:
        target = conv.get("target")
    if "command" not in values:
        for key in _COMMAND_ONLY:
            if key in values:
                violation(key, f"'{key}' only applies to command jobs")
    elif "isolation" in values:
        violation("isolation", "'isolation' only applies to python: and service: targets (a "
                               "command always runs as a process of its own)")

    # -- mode rules ------------------------------------------------------------------------
    mode: Mode = conv.get("mode", Mode.EVERY_INSTANCE)
    overlap: OverlapPolicy = conv.get("overlap_policy", OverlapPolicy.SKIP)
    if mode is Mode.SINGLE_INSTANCE:
        if (not isinstance(target, CommandTarget) and target is not None
                and conv.get("isolation", ctx.isolation_default) is Isolation.THREAD):
            warning("isolation" if "isolation" in values else "mode",
                    "isolation = \"thread\" may run beside its retry after a freeze; call "
                    "ctx.still_owner() before side effects")
        if ctx.memory_database:
            violation("mode", "single_instance needs a database, but database = \"none\" "
                              "keeps state in memory; configure SQLite or PostgreSQL")
        if overlap is OverlapPolicy.QUEUE_ONE:
            violation("overlap_policy", "queue_one works only with every_instance jobs; "
                                        "single_instance jobs need overlap_policy \"skip\"")
        elif overlap is not OverlapPolicy.SKIP:
            violation("overlap_policy", f"single_instance jobs need overlap_policy \"skip\", "
                                        f"not {overlap.value!r}")
    # Only an unset policy takes the mode default; an explicit fire_now is honoured.
    misfire: MisfirePolicy = conv.get(
        "misfire_policy",
        MisfirePolicy.FIRE_NOW if mode is Mode.SINGLE_INSTANCE else MisfirePolicy.SKIP,
    )
    enabled: bool = conv.get("enabled", True)

    # -- checks that need the whole job ----------------------------------------------------
    every: timedelta | None = conv.get("every")
    timezone: str = conv.get("timezone", "UTC")
    dst_gap: DstGap = conv.get("dst_gap", DstGap.AUTO)
    dst_fold: DstFold = conv.get("dst_fold", DstFold.AUTO)
    anchor: datetime = conv.get("anchor", EPOCH)
    timeout: timedelta | None = conv.get("timeout")
    # These run whenever their own inputs could be read, so one run reports everything.
    if (expression is not None or every is not None) and not failed & _SCHEDULE_INPUTS:
        schedule = checks.make_schedule(expression, every, anchor, timezone, dst_gap, dst_fold)
        for kind, key, message in checks.check_schedule(schedule, ctx.now, timeout, misfire,
                                                        days_or=raw.days_or):
            (violation if kind == "violation" else warning)(key, message)
    retry_problem = _retry_problem(conv, values)
    if retry_problem:
        violation(*retry_problem)
    if ctx.check_targets and enabled and not failed & {"target", "enabled"}:
        problem = None
        if isinstance(target, ServiceTarget):
            problem = checks.check_service_target(target, ctx.registry)
        elif isinstance(target, PythonTarget):
            problem = checks.check_python_target(target)
        if problem:
            violation("target", problem)
        if isinstance(target, CommandTarget):
            missing = checks.check_command(target)
            if missing:
                warning("command", missing)
    calendars: tuple[Calendar, ...] = ()
    if "after_timeout" in values and not dependent:
        violation("after_timeout", "'after_timeout' only applies to dependents (after = [...])")
    if "calendar" in values:
        calendars, calendar_problems = _calendars(values["calendar"], ctx)
        for message in calendar_problems:
            violation("calendar", message)
    if result.violations:
        return result

    assert target is not None and isinstance(raw.id, str)
    result.job = JobDefinition(
        id=raw.id,
        target=target,
        cron=expression.text if expression is not None else None,
        cron_written=(expression.written if expression is not None
                      and expression.hash_id is not None else None),
        every=every,
        anchor=anchor,
        timezone=timezone,
        enabled=enabled,
        mode=mode,
        overlap_policy=overlap,
        serial_group=conv.get("serial_group"),
        misfire_policy=misfire,
        misfire_threshold=conv.get("misfire_threshold", DEFAULT_MISFIRE_THRESHOLD),
        catchup_limit=conv.get("catchup_limit", 100),
        max_attempts=conv.get("max_attempts", 3),
        retry_backoff=conv.get("retry_backoff", DEFAULT_RETRY_BACKOFF),
        timeout=timeout,
        kill_timeout=conv.get("kill_timeout", DEFAULT_KILL_TIMEOUT),
        tracked=conv.get("tracked", ctx.tracked_default),
        jitter=conv.get("jitter", NO_JITTER),
        parameters=conv.get("parameters", {}),
        payload=conv.get("payload"),
        description=conv.get("description"),
        dst_gap=dst_gap,
        dst_fold=dst_fold,
        late_after=conv.get("late_after"),
        output_limit=conv.get("output_limit", ctx.output_limit_default),
        isolation=(Isolation.THREAD if isinstance(target, CommandTarget)
                   else conv.get("isolation", ctx.isolation_default)),
        long_running_after=conv.get("long_running_after"),
        notify=notify,
        calendars=calendars,
        after=conv.get("after", ()),
        after_timeout=conv.get("after_timeout", DEFAULT_AFTER_TIMEOUT),
        source=raw.source,
    )
    return result


def _calendars(value: Any, ctx: BuildContext) -> tuple[tuple[Calendar, ...], list[str]]:
    """``calendar = "NAME"`` or a list of names: the calendars, or what is wrong."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(
            isinstance(n, str) and n.strip() for n in names):
        return (), ["must be a calendar name or a non-empty array of names, e.g. "
                    "calendar = \"business-days\""]
    found: list[Calendar] = []
    problems: list[str] = []
    for name in dict.fromkeys(names):
        calendar = ctx.calendars.get(name)
        if calendar is not None:
            found.append(calendar)
        elif name not in ctx.bad_calendars:
            known = [*ctx.calendars, *ctx.bad_calendars]
            hint = did_you_mean(name, known) or (
                " (define it in a [calendars.<name>] table in cronctl.toml or a jobs file)")
            problems.append(f"unknown calendar {name!r}{hint}")
    return tuple(found), problems
