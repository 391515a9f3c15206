"""Checks that need a built schedule or a live import: never-firing schedules, the
warnings of docs/behaviour.md#jobs, whether ``service:``/``python:`` targets resolve, and whether
a command's program exists."""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Literal

from cronctl.cron import CronExpression, Interval, Schedule, parse_cron, shared_schedule
from cronctl.durations import format_duration
from cronctl.jobs.model import (
    EPOCH,
    CommandTarget,
    DstFold,
    DstGap,
    JobDefinition,
    MisfirePolicy,
    PythonTarget,
    ServiceTarget,
)
from cronctl.jobs.registry import ServiceRegistry
from cronctl.jobs.violation import did_you_mean, summarize_exception
from cronctl.trust import install_guard, untrusted_module

Finding = tuple[Literal["violation", "warning"], str, str]
_GAP_SAMPLES = 24  # fires looked at for "closer together than timeout"


def make_schedule(
    expression: CronExpression | None,
    every: timedelta | None,
    anchor: datetime = EPOCH,
    timezone: str = "UTC",
    dst_gap: DstGap = DstGap.AUTO,
    dst_fold: DstFold = DstFold.AUTO,
) -> Schedule:
    if expression is not None:
        # str(), not .value: an enum's .value is a descriptor call, ~1 us a job at 100k.
        return shared_schedule(expression, timezone, str(dst_gap), str(dst_fold))
    assert every is not None
    return shared_schedule(Interval(every, anchor))


def schedule_inputs(job: JobDefinition) -> tuple[object, ...]:
    """Everything :func:`job_schedule` reads of ``job``: jobs with equal inputs have
    equal schedules (a large set shares few: they can be computed once)."""
    return (job.cron, job.every, job.anchor, job.timezone, job.dst_gap, job.dst_fold)


def job_schedule(job: JobDefinition) -> Schedule:
    """The :class:`Schedule` of a validated job (cron in its zone, or its interval)."""
    expression = parse_cron(job.cron) if job.cron is not None else None
    return make_schedule(expression, job.every, job.anchor, job.timezone, job.dst_gap,
                         job.dst_fold)


def _fires(schedule: Schedule, now: datetime, count: int) -> Iterator[datetime]:
    t: datetime | None = now
    for _ in range(count):
        assert t is not None
        t = schedule.next_after(t)
        if t is None:
            return
        yield t


_CHECKED: dict[tuple[object, ...], tuple[Finding, ...]] = {}
_CHECKED_LIMIT = 16384


def check_schedule(
    schedule: Schedule, now: datetime, timeout: timedelta | None, misfire: MisfirePolicy,
    *, days_or: bool = False,
) -> tuple[Finding, ...]:
    """The findings of one schedule, worked out once per distinct question: jobs that
    share a schedule share its :class:`Schedule` (``shared_schedule``), and a job set
    is checked against one ``now``, so 100,000 jobs on a few hundred schedules search
    the calendar a few hundred times."""
    key = (schedule, now, timeout, misfire, days_or)
    found = _CHECKED.get(key)
    if found is None:
        if len(_CHECKED) >= _CHECKED_LIMIT:
            _CHECKED.clear()
        found = _CHECKED[key] = tuple(_check_schedule(schedule, now, timeout, misfire,
                                                      days_or=days_or))
    return found


def _check_schedule(
    schedule: Schedule, now: datetime, timeout: timedelta | None, misfire: MisfirePolicy,
    *, days_or: bool = False,
) -> list[Finding]:
    """Never-firing schedules and the schedule warnings; ``days_or``: both day fields are
    restricted on purpose (``# cronctl: days-or`` on the cron line), no warning for it."""
    found: list[Finding] = []
    key = "cron" if schedule.expression is not None else "every"
    first = schedule.next_after(now)
    if first is None:
        found.append(("violation", key,
                      f"{schedule.text!r} never fires: no fire within 4 years"))
        return found
    expr = schedule.expression
    if expr is not None and expr.dom_restricted and expr.dow_restricted and not days_or:
        found.append(("warning", "cron",
                      f"both day-of-month and day-of-week are restricted in {expr.text!r}: "
                      "it fires when day-of-month OR day-of-week matches (not AND); if "
                      "that is meant, end the line with '# cronctl: days-or'"))
    if timeout is not None:
        gap = _closest_gap(schedule, now)
        if gap is not None and gap < timeout:
            found.append(("warning", "timeout",
                          f"fires as often as every {format_duration(gap)}, closer together "
                          f"than its timeout of {format_duration(timeout)}"))
    if misfire is MisfirePolicy.FIRE_ALL:
        gap = _closest_gap(schedule, now, samples=4)
        if gap is not None and gap < timedelta(minutes=1):
            found.append(("warning", "misfire_policy",
                          "fire_all with a per-second schedule: after an outage it replays "
                          "up to catchup_limit fires back to back"))
    return found


def _closest_gap(schedule: Schedule, now: datetime, samples: int = _GAP_SAMPLES
                 ) -> timedelta | None:
    if schedule.interval is not None:
        return schedule.interval.every
    fires = list(_fires(schedule, now, samples))
    gaps = [b - a for a, b in zip(fires, fires[1:], strict=False)]
    return min(gaps) if gaps else None


def check_service_target(target: ServiceTarget, registry: ServiceRegistry) -> str | None:
    if target.operation_id in registry.operations:
        return None
    if not registry.operations:
        return (f"no registered service operation {target.operation_id!r}: no service is "
                "registered (is the package that provides it installed?)")
    return (f"no registered service operation {target.operation_id!r}"
            f"{did_you_mean(target.operation_id, registry.operations)}")


_PYTHON_CACHE: dict[tuple[str, str], str | None] = {}


def check_python_target(target: PythonTarget) -> str | None:
    """Why ``python:module:function`` cannot run, or ``None``. Imports the module."""
    key = (target.module, target.function)
    if key not in _PYTHON_CACHE:
        _PYTHON_CACHE[key] = _python_problem(target)
    return _PYTHON_CACHE[key]


def clear_python_cache() -> None:
    """Forget earlier import results (SIGHUP reloads re-check), and command look-ups."""
    _PYTHON_CACHE.clear()
    clear_command_cache()


def _python_problem(target: PythonTarget) -> str | None:
    distrust = untrusted_module(target.module)  # before the import runs its code
    if distrust is not None:
        return distrust
    install_guard(fresh=False)  # (and what it imports: docs/trust.md)
    try:
        obj: object = importlib.import_module(target.module)
    except (Exception, SystemExit) as exc:
        return f"cannot import module {target.module!r}: {summarize_exception(exc)}"
    for part in target.function.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = [n for n in dir(obj) if not n.startswith("_")]
            return (f"{target.module!r} has no attribute {target.function!r}"
                    f"{did_you_mean(part, names)}")
    if not callable(obj):
        return f"{target} is a {type(obj).__name__}, not a callable"
    return None


# Words a shell line may start with that are not programs on PATH.
_SHELL_WORDS = frozenset((
    "!", ".", ":", "[", "[[", "alias", "bg", "break", "case", "cd", "command", "continue",
    "echo", "eval", "exec", "exit", "export", "false", "fg", "for", "function", "getopts",
    "hash", "if", "jobs", "kill", "local", "printf", "pwd", "read", "readonly", "return",
    "select", "set", "shift", "source", "test", "time", "times", "trap", "true", "type",
    "ulimit", "umask", "unalias", "unset", "until", "wait", "while", "{", "(",
))
_SHELL_SYNTAX = frozenset("$`=(){}<>|;&*?[~\\\"'")


def check_command(target: CommandTarget) -> str | None:
    """Why the first word of a command would not start (not found, not executable), or
    ``None``. Looked up as the scheduler will: on the job's ``env`` PATH, else this
    process's PATH (under systemd the unit's PATH may differ: the check says which PATH it
    used). For ``shell = true`` only a plain first word is checked (not a builtin, a
    keyword, an assignment or anything with shell syntax); the rest of a pipeline is not."""
    program = _first_word(target)
    if program is None:
        return None
    own = "PATH" in target.env
    search = target.env["PATH"] if own else os.environ.get("PATH", os.defpath)
    key = (program, target.cwd, own, search)
    if key not in _COMMANDS:  # (100,000 jobs run a few programs: one look-up each)
        if len(_COMMANDS) >= _CHECKED_LIMIT:
            _COMMANDS.clear()
        _COMMANDS[key] = _command_problem(program, target.cwd, own, search)
    return _COMMANDS[key]


_COMMANDS: dict[tuple[str, str | None, bool, str], str | None] = {}


def clear_command_cache() -> None:
    """Forget earlier look-ups (a new load, e.g. SIGHUP, looks at the disk again)."""
    _COMMANDS.clear()


def _command_problem(program: str, cwd: str | None, own: bool, search: str) -> str | None:
    if "/" in program:
        path = program if os.path.isabs(program) or not cwd else os.path.join(cwd, program)
        if not os.path.isabs(path):
            return None  # relative to a working directory only `run` knows
        if not os.path.exists(path):
            return (f"command {program!r} does not exist; the job would fail with "
                    "'command not found'")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            return f"command {program!r} is not an executable file"
        return None
    if shutil.which(program, path=search) is None:
        where = "the PATH in its env" if own else "this process's PATH"
        return (f"command {program!r} not found on {where}; the job would fail with "
                "'command not found' (give its absolute path, or set PATH in env)")
    return None


def _first_word(target: CommandTarget) -> str | None:
    if not target.argv:
        return None
    if not target.shell:
        return target.argv[0]
    try:
        words = shlex.split(target.argv[0], comments=True)
    except ValueError:
        return None
    if not words:
        return None
    word = words[0]
    if word in _SHELL_WORDS or _SHELL_SYNTAX & set(word):
        return None
    return word
