"""Per-key conversion of raw values (TOML or decorator arguments) into model values.

Every converter takes the value as written and returns the typed value, or raises
:class:`BadValue` with a one-line message saying what is expected.
"""

from __future__ import annotations

import re
import shlex
import zoneinfo
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from cronctl.cron.zones import utc_instant
from cronctl.durations import DurationError, parse_duration
from cronctl.jobs.model import (
    AfterEdge,
    AfterOutcome,
    DstFold,
    DstGap,
    Isolation,
    MisfirePolicy,
    Mode,
    OverlapPolicy,
    PythonTarget,
    ServiceTarget,
    parse_choice,
)
from cronctl.jobs.tomlfile import MAX_STRING, MAX_STRING_TEXT
from cronctl.jobs.violation import did_you_mean

# Every key a job table may hold (docs/behaviour.md#jobs), in the order docs list them.
JOB_KEYS = (
    "cron", "every", "anchor", "timezone", "target", "command", "shell", "enabled", "mode",
    "overlap_policy", "serial_group", "misfire_policy", "misfire_threshold", "catchup_limit",
    "max_attempts", "retry_backoff", "timeout", "kill_timeout", "tracked", "jitter",
    "parameters", "payload", "env", "cwd", "description", "dst_gap", "dst_fold",
    "late_after", "notify", "user", "group", "limits", "output_limit", "long_running_after",
    "isolation",
    "calendar", "after", "after_timeout",
)

# What other schedulers (crontab, systemd timers, Kubernetes CronJobs, APScheduler, CI
# and workflow tools) call a job key, in snake case: an unknown key names ours.
JOB_KEY_ALIASES = {
    "schedule": "cron", "crontab": "cron", "cron_expression": "cron", "on_calendar": "cron",
    "interval": "every", "period": "every", "on_unit_active_sec": "every",
    "tz": "timezone", "time_zone": "timezone", "zone": "timezone", "cron_tz": "timezone",
    "func": "target", "function": "target", "handler": "target", "callable": "target",
    "cmd": "command", "exec": "command", "exec_start": "command", "args": "command",
    "argv": "command", "run": "command", "script": "command",
    "disabled": "enabled", "suspend": "enabled", "active": "enabled",
    "concurrency_policy": "overlap_policy", "max_instances": "overlap_policy",
    "concurrency": "overlap_policy", "overlap": "overlap_policy",
    "misfire_grace_time": "misfire_threshold", "starting_deadline_seconds":
    "misfire_threshold", "grace_time": "misfire_threshold",
    "coalesce": "misfire_policy", "persistent": "misfire_policy", "catchup": "misfire_policy",
    "retries": "max_attempts", "max_retries": "max_attempts", "attempts": "max_attempts",
    "backoff_limit": "max_attempts", "retry": "max_attempts",
    "retry_delay": "retry_backoff", "backoff": "retry_backoff",
    "active_deadline_seconds": "timeout", "time_limit": "timeout",
    "execution_timeout": "timeout", "runtime_max_sec": "timeout",
    "timeout_stop_sec": "kill_timeout", "termination_grace_period_seconds": "kill_timeout",
    "grace_period": "kill_timeout", "stop_timeout": "kill_timeout",
    "randomized_delay_sec": "jitter", "randomized_delay": "jitter", "splay": "jitter",
    "environment": "env", "env_vars": "env", "variables": "env",
    "working_directory": "cwd", "working_dir": "cwd", "workdir": "cwd", "dir": "cwd",
    "directory": "cwd", "chdir": "cwd",
    "run_as": "user", "username": "user", "run_as_user": "user",
    "kwargs": "parameters", "params": "parameters", "arguments": "parameters",
    "depends_on": "after", "dependencies": "after", "requires": "after", "needs": "after",
    "upstream": "after", "wait_for": "after",
    "lock": "serial_group", "mutex": "serial_group",
    "holidays": "calendar", "exclude": "calendar",
    "sla": "late_after",
    "mailto": "notify", "mail_to": "notify", "alerts": "notify", "on_failure": "notify",
    "resources": "limits", "memory_max": "limits", "memory_limit": "limits",
    "comment": "description", "desc": "description", "help": "description",
}


class BadValue(ValueError):
    """A value of the wrong type or out of range; the message is one line."""


NUL_TEXT = "contains a NUL character, which no command, path or name can hold"


def _shown(value: object) -> str:
    """A value quoted back in a message: short (a long one is cut)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def no_nul(text: str, what: str = "") -> str:
    if "\x00" in text:
        raise BadValue(f"{what}{NUL_TEXT}")
    return text


def _type_name(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "an array", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def to_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadValue(f"must be true or false, not {_type_name(value)} ({_shown(value)})")
    return value


def to_text(value: Any, *, blank_ok: bool = True) -> str:
    if not isinstance(value, str):
        raise BadValue(f"must be a string, not {_type_name(value)} ({_shown(value)})")
    if not blank_ok and not value.strip():
        raise BadValue("must not be blank")
    return no_nul(value)


# Counts are bounded too (docs/behaviour.md#configuration): a value out of range is a violation.
MAX_ATTEMPTS = 100
MAX_CATCHUP = 100_000


def to_positive_int(value: Any, *, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(f"must be a whole number >= 1, not {_type_name(value)} "
                       f"({_shown(value)})")
    if value < 1:
        raise BadValue(f"must be >= 1, not {value}")
    if value > maximum:
        shown = str(value) if value < 10**30 else f"{str(value)[:20]}..."
        raise BadValue(f"must be at most {maximum}, not {shown}")
    return value


def to_duration(value: Any, *, positive: bool = False, minimum: timedelta | None = None
                ) -> timedelta:
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        raise BadValue(f"must not be negative, not {value!r}")
    try:
        result = parse_duration(value, allow_zero=not positive)
    except DurationError as exc:
        raise BadValue(str(exc)) from None
    if minimum is not None and result < minimum:
        raise BadValue(f"{value!r} is shorter than the minimum {minimum.total_seconds():g}s")
    return result


def to_anchor(value: Any) -> datetime:
    """A TOML datetime or an ISO 8601 string; without an offset it is taken as UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise BadValue(f"{value!r} is not an ISO 8601 date-time "
                           "(e.g. 2024-01-01T00:00:00Z)") from None
    elif isinstance(value, date) and not isinstance(value, datetime):
        value = datetime.combine(value, time(0))
    if not isinstance(value, datetime):
        raise BadValue(f"must be a date-time, not {_type_name(value)} ({value!r})")
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)
    try:
        # Found by fuzzing: 9999-12-31T23:59:59-14:00 (after year 9999 in UTC) was a
        # traceback; a decorator's zoned anchor inside a DST gap names no instant at all.
        return utc_instant(value)
    except ValueError as exc:
        raise BadValue(str(exc)) from None


_ZONES: list[str] | None = None


def to_zone(value: Any) -> str:
    name = to_text(value, blank_ok=False).strip()
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        global _ZONES
        if _ZONES is None:
            _ZONES = sorted(zoneinfo.available_timezones())
        raise BadValue(f"unknown time zone {name!r}{did_you_mean(name, _ZONES)}; "
                       "use an IANA name like 'Europe/Berlin'") from None
    return name


def to_target(value: Any) -> ServiceTarget | PythonTarget:
    text = to_text(value, blank_ok=False).strip()
    kind, sep, rest = text.partition(":")
    if sep and kind == "service":
        if not rest or rest.count(".") < 2 or any(not p for p in rest.split(".")):
            raise BadValue(f"{text!r}: write service:<namespace>.<service>.<operation>")
        return ServiceTarget(rest)
    if sep and kind == "python":
        module, sep2, function = rest.partition(":")
        if not sep2 or not module or not function:
            raise BadValue(f"{text!r}: write python:<module>:<function>")
        return PythonTarget(module, function)
    raise BadValue(f"{text!r} must start with 'service:' or 'python:' "
                   "(for a program, use command = [...])")


def to_command(value: Any, shell: bool) -> tuple[str, ...]:
    """argv; with ``shell`` the one command line as ``argv[0]``."""
    if isinstance(value, str):
        if not value.strip():
            raise BadValue("must not be empty")
        if len(value) > MAX_STRING:  # (before shlex, which is quadratic in it)
            raise BadValue(f"is {len(value):,} characters long; at most {MAX_STRING_TEXT}")
        no_nul(value)
        if shell:
            return (value,)
        try:
            argv = tuple(shlex.split(value))
        except ValueError as exc:
            raise BadValue(f"cannot split {value!r} like a shell would: {exc}") from None
        if not argv:
            raise BadValue("must not be empty")
        return argv
    if isinstance(value, list | tuple):
        if not value:
            raise BadValue("must not be an empty array")
        bad = [item for item in value if not isinstance(item, str)]
        if bad:
            raise BadValue(f"every argument must be a string, not {_shown(bad[0])}")
        for item in value:
            no_nul(item, "an argument ")
        if shell:
            raise BadValue("with shell = true, write the command as one string")
        return tuple(value)
    raise BadValue(f"must be an array of strings or a string, not {_type_name(value)}")


def to_table(value: Any) -> dict[str, Any]:
    # (the value is not quoted back: a table's values may be secrets)
    if not isinstance(value, Mapping):
        raise BadValue(f"must be a table, not {_type_name(value)}")
    return dict(value)


def to_env(value: Any) -> dict[str, str]:
    """``env = { NAME = "value" }``: names that exec can set (not empty, no ``=``, no
    NUL), string values without a NUL. Values are never quoted back (secrets)."""
    if not isinstance(value, Mapping):
        raise BadValue(f"must be a table of NAME = \"value\", not {_type_name(value)}")
    table = dict(value)
    for key, item in table.items():
        if not key or "=" in key or "\x00" in key:
            raise BadValue(f"variable name {_shown(key)} must be non-empty, without '=' or "
                           "a NUL character")
        if not isinstance(item, str):
            raise BadValue(f"variable {key!r} must be a string (quote it), not "
                           f"{_type_name(item)}")
        no_nul(item, f"the value of {key!r} ")
    return table


def _enum(kind: type[Any]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        try:
            return parse_choice(kind, value)
        except ValueError as exc:
            allowed = [m.value for m in kind]
            hint = did_you_mean(str(value).lower().replace("-", "_"), allowed)
            raise BadValue(f"{exc}{hint}") from None

    return convert


def _identity(value: Any) -> Any:
    return value


# Keys whose conversion depends on nothing else. cron/every/command/target are handled by
# the builder (they interact); so is timeout's "> 0".
_AFTER_ENTRY = re.compile(r"([A-Za-z0-9._-]{1,200})(?::([A-Za-z_-]+))?")


def to_after(value: Any) -> tuple[AfterEdge, ...]:
    """``after = ["extract", "load:any"]`` (a single string is one entry)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise BadValue("must be a non-empty array of job ids, each optionally with an "
                       "outcome: [\"extract\", \"load:any\"]")
    edges: list[AfterEdge] = []
    for item in items:
        match = _AFTER_ENTRY.fullmatch(item.strip()) if isinstance(item, str) else None
        if match is None:
            raise BadValue(f"{item!r} is not a job id with an optional outcome "
                           "(\"extract\", \"extract:failed\", \"extract:any\")")
        outcome = AfterOutcome.SUCCEEDED
        if match.group(2) is not None:
            try:
                outcome = parse_choice(AfterOutcome, match.group(2))
            except ValueError:
                raise BadValue(f"{item!r}: the outcome must be one of succeeded, failed, "
                               "any") from None
        edge = AfterEdge(match.group(1), outcome)
        if any(e.job_id == edge.job_id for e in edges):
            raise BadValue(f"{edge.job_id!r} is named twice")
        edges.append(edge)
    return tuple(edges)


SIMPLE: Mapping[str, Callable[[Any], Any]] = {
    "anchor": to_anchor,
    "timezone": to_zone,
    "target": to_target,
    "shell": to_bool,
    "enabled": to_bool,
    "mode": _enum(Mode),
    "overlap_policy": _enum(OverlapPolicy),
    "serial_group": lambda v: to_text(v, blank_ok=False),
    "misfire_policy": _enum(MisfirePolicy),
    "misfire_threshold": to_duration,
    "catchup_limit": lambda v: to_positive_int(v, maximum=MAX_CATCHUP),
    "max_attempts": lambda v: to_positive_int(v, maximum=MAX_ATTEMPTS),
    "retry_backoff": to_duration,
    "timeout": lambda v: to_duration(v, positive=True),
    "kill_timeout": to_duration,
    "tracked": to_bool,
    "jitter": to_duration,
    "parameters": to_table,
    "payload": _identity,
    "env": to_env,
    "cwd": lambda v: to_text(v, blank_ok=False),
    "description": to_text,
    "dst_gap": _enum(DstGap),
    "isolation": _enum(Isolation),
    "dst_fold": _enum(DstFold),
    "every": lambda v: to_duration(v, positive=True, minimum=timedelta(seconds=1)),
    "late_after": lambda v: to_duration(v, positive=True),
    "after": lambda v: to_after(v),
    "after_timeout": lambda v: to_duration(v, positive=True),
}
