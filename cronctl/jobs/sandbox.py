"""The sandbox keys of a command job (docs/behaviour.md#sandbox-and-output): ``user``, ``group``,
``limits``, and the output and duration keys of every job (``output_limit``,
``long_running_after``).

Converters raise :class:`~cronctl.jobs.convert.BadValue` with a one-line message; the
checks of who a job runs as need the password and group databases of this host.
"""

from __future__ import annotations

import grp
import math
import os
import pwd
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Literal

from cronctl.durations import DurationError, parse_duration
from cronctl.jobs.convert import BadValue, to_positive_int, to_table, to_text
from cronctl.jobs.model import AUTO_LONG_RUNNING, Limits
from cronctl.jobs.violation import did_you_mean
from cronctl.sizes import SizeError, parse_size

Finding = tuple[Literal["violation", "warning"], str, str]
LIMIT_KEYS = ("memory", "cpu_time", "open_files", "processes", "file_size")
MAX_COUNT = 1 << 30  # open files and processes: far above any kernel maximum
MIN_OUTPUT_LIMIT = 1024


def to_size(value: Any) -> int:
    try:
        return parse_size(value)
    except SizeError as exc:
        raise BadValue(str(exc)) from None


def to_cpu_seconds(value: Any) -> int:
    """A duration rounded up to whole seconds (RLIMIT_CPU counts seconds), at least 1."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        raise BadValue(f"must not be negative, not {value!r}")
    try:
        seconds = parse_duration(value, allow_zero=False).total_seconds()
    except DurationError as exc:
        raise BadValue(str(exc)) from None
    return max(1, math.ceil(seconds))


_LIMIT_CONVERTERS: Mapping[str, Callable[[Any], int]] = {
    "memory": to_size,
    "cpu_time": to_cpu_seconds,
    "open_files": lambda v: to_positive_int(v, maximum=MAX_COUNT),
    "processes": lambda v: to_positive_int(v, maximum=MAX_COUNT),
    "file_size": to_size,
}


def read_limits(value: Any) -> tuple[Limits, list[tuple[str, str]]]:
    """The ``limits`` table and its problems as ``(sub-key, message)``: every one of them,
    so that validation reports them all at once."""
    try:
        table = to_table(value)
    except BadValue as exc:
        return Limits(), [("", str(exc))]
    problems: list[tuple[str, str]] = []
    values: dict[str, int] = {}
    for key, item in table.items():
        convert = _LIMIT_CONVERTERS.get(key)
        if convert is None:
            problems.append((key, f"unknown limit{did_you_mean(key, LIMIT_KEYS)}; "
                                  f"known: {', '.join(LIMIT_KEYS)}"))
            continue
        try:
            values[key] = convert(item)
        except BadValue as exc:
            problems.append((key, str(exc)))
    return Limits(**values), problems


def to_output_limit(value: Any) -> int:
    size = to_size(value)
    if size < MIN_OUTPUT_LIMIT:
        raise BadValue(f"{value!r} is below the minimum of 1K")
    return size


def to_long_running_after(value: Any) -> timedelta | str:
    if isinstance(value, str) and value.strip().lower() == AUTO_LONG_RUNNING:
        return AUTO_LONG_RUNNING
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        raise BadValue(f"must not be negative, not {value!r}")
    try:
        return parse_duration(value, allow_zero=False)
    except DurationError as exc:
        raise BadValue(f"{exc} (or \"auto\")") from None


def to_account(value: Any) -> str:
    """A user or group name, or a numeric id (an integer or a string of digits)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise BadValue(f"must not be negative, not {value}")
        return str(value)
    return to_text(value, blank_ok=False).strip()


# The sandbox keys whose conversion depends on nothing else (``limits`` has sub-keys).
SIMPLE: Mapping[str, Callable[[Any], Any]] = {
    "user": to_account,
    "group": to_account,
    "output_limit": to_output_limit,
    "long_running_after": to_long_running_after,
}


def check_identity(user: str | None, group: str | None, *,
                   euid: int | None = None) -> list[Finding]:
    """Unknown users and groups are violations; a ``run`` that is not root cannot switch
    to them, which is a warning here (the attempts will fail)."""
    found: list[Finding] = []
    if user is not None and lookup_user(user) is None:
        found.append(("violation", "user", f"unknown user {user!r} (not in the password "
                                           "database of this host)"))
    if group is not None and lookup_group(group) is None:
        found.append(("violation", "group", f"unknown group {group!r} (not in the group "
                                            "database of this host)"))
    if (user is not None or group is not None) and not found:
        euid = os.geteuid() if euid is None else euid
        if euid != 0:
            key = "user" if user is not None else "group"
            found.append(("warning", key, "cronctl run needs to be root to run a command as "
                                          "another user or group; as this user its attempts "
                                          "will fail"))
    return found


def lookup_user(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwuid(int(name)) if name.isascii() and name.isdigit() else pwd.getpwnam(name)
    except (KeyError, OverflowError, ValueError):  # (ValueError: a NUL in the name)
        return None


def lookup_group(name: str) -> grp.struct_group | None:
    try:
        return grp.getgrgid(int(name)) if name.isascii() and name.isdigit() else grp.getgrnam(name)
    except (KeyError, OverflowError, ValueError):  # (ValueError: a NUL in the name)
        return None


__all__ = ["LIMIT_KEYS", "check_identity", "lookup_group", "lookup_user", "read_limits",
           "to_account", "to_long_running_after", "to_output_limit", "to_size"]
