"""Plain-English readings of cron expressions, built from the parsed sets.

Common shapes get idiomatic phrases ("Every 15 minutes", "At 08:00:00, Monday through
Friday"); anything else falls back to a literal, still correct, field-by-field reading.
Because the reading is built from the sets, equal expressions read the same.

This module reads only the parsed fields (:class:`CronFields`) and never imports
:mod:`cronctl.cron.expression`; :meth:`CronExpression.explain` calls it with itself.
"""

from __future__ import annotations

from typing import Protocol


class CronFields(Protocol):
    """The parsed sets of a cron expression, as :class:`CronExpression` holds them.

    Values are cron's: seconds and minutes 0-59, hours 0-23, days 1-31, months 1-12,
    weekdays 0-6 with 0 = Sunday. ``nth_weekdays`` holds ``(weekday, k)`` for ``D#k``;
    ``last_weekdays`` the ``DL`` days; ``last_day`` is ``L`` in day-of-month. A day field
    is restricted when it does not allow every day (decided on the sets,
    docs/behaviour.md#schedules).
    """

    @property
    def seconds(self) -> frozenset[int]: ...
    @property
    def minutes(self) -> frozenset[int]: ...
    @property
    def hours(self) -> frozenset[int]: ...
    @property
    def days(self) -> frozenset[int]: ...
    @property
    def months(self) -> frozenset[int]: ...
    @property
    def weekdays(self) -> frozenset[int]: ...
    @property
    def last_day(self) -> bool: ...
    @property
    def nth_weekdays(self) -> frozenset[tuple[int, int]]: ...
    @property
    def last_weekdays(self) -> frozenset[int]: ...
    @property
    def dom_restricted(self) -> bool: ...
    @property
    def dow_restricted(self) -> bool: ...

_DAY_WORDS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTH_WORDS = ("", "January", "February", "March", "April", "May", "June", "July",
                "August", "September", "October", "November", "December")
_ORDINALS = ("", "first", "second", "third", "fourth", "fifth")
_MAX_LISTED_TIMES = 4


def _join(words: list[str], last: str = "and") -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def _runs(ordered: list[int]) -> list[tuple[int, int]]:
    """Consecutive stretches of an ordered list: [1,2,3,7] -> [(1,3),(7,7)]."""
    runs: list[tuple[int, int]] = []
    for value in ordered:
        if runs and value == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs


def _step(values: frozenset[int], low: int, top: int) -> tuple[int, int] | None:
    """``(start, N)`` when values are ``start-top/N`` with N > 1, else None."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return None
    step = ordered[1] - ordered[0]
    if step > 1 and set(range(ordered[0], top + 1, step)) == values and ordered[0] < low + step:
        return ordered[0], step
    return None


def _ordinal_suffix(n: int) -> str:
    if n % 100 in (11, 12, 13):
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def _numbers(values: frozenset[int], name: str, fmt: str = "{}") -> str:
    """``minute 5`` / ``minutes 0, 15 and 45`` / ``minutes 0 through 29``."""
    words: list[str] = []
    for a, b in _runs(sorted(values)):
        if b - a >= 2:
            words.append(f"{fmt.format(a)} through {fmt.format(b)}")
        else:
            words.extend(fmt.format(v) for v in range(a, b + 1))
    plural = "s" if len(values) > 1 else ""
    return f"{name}{plural} {_join(words)}"


def _every(values: frozenset[int], low: int, top: int, unit: str) -> str | None:
    """``every minute`` / ``every 15 minutes`` / ``every 15 minutes from minute 5``."""
    if len(values) == top - low + 1:
        return f"every {unit}"
    stepped = _step(values, low, top)
    if stepped is None:
        return None
    start, step = stepped
    base = f"every {step} {unit}s"
    return base if start == low else f"{base} from {unit} {start}"


def _hour_window(hours: frozenset[int], last_minute: int) -> str:
    """Qualifier for a restricted hour set: ``between 09:00 and 17:59``."""
    every = _every(hours, 0, 23, "hour")
    if every is not None:
        return every
    parts = []
    for a, b in _runs(sorted(hours)):
        parts.append(f"between {a:02}:00 and {b:02}:{last_minute:02}")
    return _join(parts)


def _time_phrase(expr: CronFields) -> tuple[str, bool]:
    """The time-of-day part, and whether it is a short list of fixed times."""
    secs, mins, hours = expr.seconds, expr.minutes, expr.hours
    if len(secs) * len(mins) * len(hours) <= _MAX_LISTED_TIMES and len(hours) < 24:
        times = [f"{h:02}:{m:02}:{s:02}" for h in sorted(hours) for m in sorted(mins)
                 for s in sorted(secs)]
        return f"at {_join(times)}", True
    all_minutes = len(mins) == 60
    all_hours = len(hours) == 24
    last_minute = max(mins)
    parts: list[str] = []
    if secs != frozenset({0}):
        every_second = _every(secs, 0, 59, "second")
        if every_second is not None:
            parts.append(every_second)
        elif all_minutes:
            parts.append(f"at {_numbers(secs, 'second')} of every minute")
        else:
            parts.append(f"at {_numbers(secs, 'second')}")
        if not all_minutes:
            parts.append(_every(mins, 0, 59, "minute") or f"at {_numbers(mins, 'minute')}")
    else:
        every_minute = _every(mins, 0, 59, "minute")
        if every_minute is not None:
            parts.append(every_minute)
        elif mins == frozenset({0}):
            every_hour = _every(hours, 0, 23, "hour")
            if every_hour is not None:
                return every_hour, False
            return f"at minute 0 of {_numbers(hours, 'hour', '{:02}')}", False
        elif all_hours:
            return f"at {_numbers(mins, 'minute')} of every hour", False
        else:
            parts.append(f"at {_numbers(mins, 'minute')}")
    if not all_hours:
        parts.append(_hour_window(hours, last_minute))
    return ", ".join(parts), False


def _dom_phrase(expr: CronFields) -> str:
    words: list[str] = []
    stepped = _step(expr.days, 1, 31) if len(expr.days) < 31 else None
    if len(expr.days) == 31:
        words.append("every day")
    elif stepped is not None:
        start, step = stepped
        words.append(f"every {_ordinal_suffix(step)} day" + (f" from day {start}"
                                                             if start != 1 else ""))
    elif expr.days:
        words.append(_numbers(expr.days, "day"))
    if expr.last_day:
        words.append("the last day")
    return f"on {_join(words)} of the month"


def _dow_phrase(expr: CronFields) -> str:
    phrases: list[str] = []
    if expr.weekdays:
        # Read weeks Monday first: "Saturday and Sunday", "Friday through Monday".
        ordered = sorted((d - 1) % 7 for d in expr.weekdays)
        runs = _runs(ordered)
        names = [(_DAY_WORDS[(a + 1) % 7], _DAY_WORDS[(b + 1) % 7]) for a, b in runs]
        if len(runs) == 1 and runs[0][1] - runs[0][0] >= 2:
            phrases.append(f"{names[0][0]} through {names[0][1]}")
        else:
            words: list[str] = []
            for (a, b), (first, last) in zip(runs, names, strict=True):
                if b - a >= 2:
                    words.append(f"{first} through {last}")
                else:
                    words.extend(_DAY_WORDS[(v + 1) % 7] for v in range(a, b + 1))
            phrases.append(f"on {_join(words)}")
    for day, k in sorted(expr.nth_weekdays, key=lambda p: (p[1], (p[0] - 1) % 7)):
        phrases.append(f"on the {_ORDINALS[k]} {_DAY_WORDS[day]} of the month")
    for day in sorted(expr.last_weekdays, key=lambda d: (d - 1) % 7):
        phrases.append(f"on the last {_DAY_WORDS[day]} of the month")
    return _join(phrases, "or")


def _month_phrase(expr: CronFields) -> str | None:
    if len(expr.months) == 12:
        return None
    runs = _runs(sorted(expr.months))
    if len(runs) == 1 and runs[0][1] - runs[0][0] >= 2:
        return f"{_MONTH_WORDS[runs[0][0]]} through {_MONTH_WORDS[runs[0][1]]}"
    words: list[str] = []
    for a, b in runs:
        if b - a >= 2:
            words.append(f"{_MONTH_WORDS[a]} through {_MONTH_WORDS[b]}")
        else:
            words.extend(_MONTH_WORDS[m] for m in range(a, b + 1))
    return f"in {_join(words)}"


def explain(expr: CronFields) -> str:
    """``"At 08:00:00, Monday through Friday"``, ``"Every 15 minutes"``, ..."""
    time, fixed = _time_phrase(expr)
    parts = [time]
    if expr.dom_restricted and expr.dow_restricted:
        # The OR rule (docs/behaviour.md#day-matching): either day field may match on its own.
        parts.append(f"{_dom_phrase(expr)} or {_dow_phrase(expr)}")
    elif expr.dom_restricted:
        parts.append(_dom_phrase(expr))
    elif expr.dow_restricted:
        parts.append(_dow_phrase(expr))
    elif fixed:
        parts.append("every day")
    month = _month_phrase(expr)
    if month is not None:
        parts.append(month)
    text = ", ".join(parts)
    return text[0].upper() + text[1:]
