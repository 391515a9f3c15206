"""Durations as users write them: ``"90s"``, ``"5m"``, ``"1h30m"``, ``"2d"``, ``"250ms"``
or a bare number of seconds (int or float, or a string of digits).

Every duration is at most :data:`MAX_DURATION` (100 years, docs/behaviour.md#configuration): longer
ones are rejected here, in the one parser, so no caller ever overflows ``timedelta`` or
``datetime`` (``now - 1000000d`` is before year 1) and every value has a one-line error.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w)")  # ASCII digits only

MAX_DURATION = timedelta(days=36525)  # 100 years of 365.25 days
MAX_DURATION_TEXT = "100 years (36525d)"


class DurationError(ValueError):
    """A duration that cannot be read; the message says what form is expected."""


def parse_duration(value: object, *, allow_zero: bool = True) -> timedelta:
    """Read a duration. Raises :class:`DurationError` with a one-line message."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise DurationError(f"{value!r} is not a duration; write e.g. \"90s\", \"5m\" or \"1h30m\"")
    elif isinstance(value, int):
        # float() of a huge int raises OverflowError: anything that large is "too long".
        seconds = float(value) if abs(value) <= 10**18 else (math.inf if value > 0 else -math.inf)
    elif isinstance(value, float):
        if math.isnan(value):  # TOML can say nan
            raise DurationError("nan is not a duration; write e.g. \"90s\", \"5m\" or \"1h30m\"")
        seconds = value
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if not text:
            raise DurationError("empty duration; write e.g. \"90s\", \"5m\" or \"1h30m\"")
        if re.fullmatch(r"[0-9]+(\.[0-9]+)?", text):
            seconds = float(text)
        else:
            pos = 0
            seconds = 0.0
            for match in _PART.finditer(text):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _UNITS[match.group(2)]
                pos = match.end()
            if pos != len(text) or pos == 0:
                raise DurationError(
                    f"{value!r} is not a duration; write e.g. \"90s\", \"5m\" or \"1h30m\""
                )
    else:
        raise DurationError(f"{value!r} is not a duration; write e.g. \"90s\", \"5m\" or \"1h30m\"")
    if seconds < 0:
        raise DurationError(f"{_shown(value)} is negative; a duration must be >= 0")
    if seconds > MAX_DURATION.total_seconds():  # also inf (a 400-digit number)
        raise DurationError(f"{_shown(value)} is longer than {MAX_DURATION_TEXT}, the longest "
                            "duration allowed")
    if not allow_zero and seconds == 0:
        raise DurationError(f"{value!r} is zero; a duration must be > 0")
    return timedelta(seconds=seconds)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def format_duration(delta: timedelta) -> str:
    """Short human form: ``3h 2m``, ``45s``, ``2d 4h``; sub-second values as ``0s``."""
    total = int(delta.total_seconds())
    sign = "-" if total < 0 else ""
    total = abs(total)
    days, rem = divmod(total, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    parts: list[str] = []
    if days:
        parts.append(f"{days}d")
    if hours:
        parts.append(f"{hours}h")
    if minutes and not days:
        parts.append(f"{minutes}m")
    if secs and not days and not hours:
        parts.append(f"{secs}s")
    return sign + (" ".join(parts) if parts else "0s")
