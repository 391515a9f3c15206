"""``[calendars.NAME]`` tables (in ``cronctl.toml`` or a jobs file) into :class:`Calendar`
values, every problem a :class:`Violation` naming the file, line and key."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from cronctl.jobs.calendar import (
    DAY_NAMES,
    Calendar,
    DateRange,
    HolidaySpec,
    IcsSource,
    holiday_table,
)
from cronctl.jobs.violation import Violation, did_you_mean, display_path, one_line

CALENDAR_KEYS = ("exclude", "holidays", "ics", "weekdays", "description")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
_HOLIDAY_KEYS = ("country", "subdiv")


@dataclass(frozen=True)
class RawCalendar:
    """One ``[calendars.NAME]`` table as written. ``base_dir`` is the directory of the file
    that holds it (an ``ics`` path is relative to it)."""

    name: str
    values: Any
    source: str
    base_dir: Path
    key_sources: Mapping[str, str] = field(default_factory=dict)

    def source_of(self, key: str) -> str:
        return self.key_sources.get(key, self.source)


Where = Callable[[tuple[str, ...], str | None], str]
"""``where(table_path, key)``: the ``path:line`` of a key of a table (``key`` None: of the
table itself)."""


def raw_calendars(tables: Any, base_dir: Path, where: Where
                  ) -> tuple[list[RawCalendar], list[Violation]]:
    """The ``calendars`` value of a file's document. ``where(table_path, key)`` gives the
    ``path:line`` of a key (``key`` None: of the table)."""
    if not isinstance(tables, dict):
        return [], [Violation(where(("calendars",), None), None, "calendars",
                              "must be a table of calendars: [calendars.<name>]")]
    out: list[RawCalendar] = []
    violations: list[Violation] = []
    for name, values in tables.items():
        table = ("calendars", name)
        source = where(table, None)
        if not isinstance(values, dict):
            violations.append(Violation(source, None, f"calendars.{name}",
                                        "must be a table ([calendars.<name>] with keys "
                                        "under it), not a value"))
            continue
        keys = {key: where(table, key) for key in values}
        out.append(RawCalendar(name, values, source, base_dir, keys))
    return out, violations


def build_calendars(raws: Iterable[RawCalendar]
                    ) -> tuple[dict[str, Calendar], set[str], list[Violation]]:
    """The valid calendars by name, the names of invalid ones (a job naming one is not
    told "unknown" as well), and every violation (duplicates included)."""
    built: dict[str, Calendar] = {}
    failed: set[str] = set()
    seen: dict[str, str] = {}
    violations: list[Violation] = []
    for raw in raws:
        if raw.name in seen:
            violations.append(Violation(raw.source, None, f"calendars.{raw.name}",
                                        f"duplicate calendar {raw.name!r}: also defined at "
                                        f"{seen[raw.name]}"))
            continue
        seen[raw.name] = raw.source
        calendar, problems = build_calendar(raw)
        violations.extend(problems)
        if calendar is None:
            failed.add(raw.name)
        else:
            built[raw.name] = calendar
    return built, failed, violations


def build_calendar(raw: RawCalendar) -> tuple[Calendar | None, list[Violation]]:
    problems: list[Violation] = []

    def bad(key: str | None, message: str) -> None:
        full = f"calendars.{raw.name}" + (f".{key}" if key else "")
        problems.append(Violation(raw.source_of(key) if key else raw.source, None, full,
                                  one_line(message)))

    if not _NAME.fullmatch(raw.name):
        bad(None, f"calendar name {raw.name!r} may only hold letters, digits, '.', '_' "
                  "and '-'")
    values = raw.values
    for key in values:
        if key not in CALENDAR_KEYS:
            bad(key, f"unknown key{did_you_mean(key, CALENDAR_KEYS)}")
    if not problems and not any(key in values for key in ("exclude", "holidays", "ics",
                                                          "weekdays")):
        bad(None, "excludes nothing: set 'exclude', 'holidays', 'ics' or 'weekdays'")
    exclude: list[DateRange] = []
    for item in _list(values.get("exclude", []), "exclude", bad):
        span = _date_range(item)
        if isinstance(span, str):
            bad("exclude", span)
        else:
            exclude.append(span)
    weekdays: set[int] = set()
    for item in _list(values.get("weekdays", []), "weekdays", bad):
        day = _weekday(item)
        if day is None:
            bad("weekdays", f"{item!r} is not a day of the week: use SUN, MON, TUE, WED, "
                            "THU, FRI, SAT (or 0-7, 0 and 7 = Sunday)")
        else:
            weekdays.add(day)
    spec: HolidaySpec | None = None
    if "holidays" in values:
        spec, message = _holidays(values["holidays"])
        if message:
            bad("holidays", message)
    ics: IcsSource | None = None
    if "ics" in values:
        ics, message = _ics(values["ics"], raw.base_dir)
        if message:
            bad("ics", message)
    if "description" in values and not isinstance(values["description"], str):
        bad("description", "must be a string")
    if problems:
        return None, problems
    return Calendar(raw.name, tuple(exclude), frozenset(weekdays), spec, ics,
                    source=raw.source), []


def _list(value: Any, key: str, bad: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str | date):
        return [value]
    bad(key, f"must be an array, not {value!r}")
    return []


def _date(text: str) -> date | None:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text.strip()):
        return None
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        return None


def _date_range(item: Any) -> DateRange | str:
    """A date (TOML date or "YYYY-MM-DD") or an inclusive range "A..B"; else why not."""
    if isinstance(item, datetime):
        return f"{item.isoformat()} is a date and time: write the date alone (YYYY-MM-DD)"
    if isinstance(item, date):
        return DateRange(item, item)
    if not isinstance(item, str):
        return f"{item!r} is not a date: write \"YYYY-MM-DD\" or \"YYYY-MM-DD..YYYY-MM-DD\""
    first_text, dots, last_text = item.partition("..")
    first = _date(first_text)
    last = _date(last_text) if dots else first
    if first is None or last is None:
        return (f"{item!r} is not a date: write \"YYYY-MM-DD\" or an inclusive range "
                "\"YYYY-MM-DD..YYYY-MM-DD\"")
    if last < first:
        return f"{item!r}: the range ends before it starts"
    return DateRange(first, last)


_FULL_NAMES = ("SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY")


def _weekday(item: Any) -> int | None:
    """SUN..SAT or SUNDAY..SATURDAY (any case), or 0-7 (0 and 7 = Sunday): cron's days."""
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return item % 7 if 0 <= item <= 7 else None
    if isinstance(item, str):
        name = item.strip().upper()
        if name in DAY_NAMES:
            return DAY_NAMES.index(name)
        if name in _FULL_NAMES:
            return _FULL_NAMES.index(name)
    return None


def _holidays(value: Any) -> tuple[HolidaySpec | None, str | None]:
    country: Any = value
    subdiv: Any = None
    if isinstance(value, str):
        pass
    elif isinstance(value, dict):
        unknown = [k for k in value if k not in _HOLIDAY_KEYS]
        if unknown:
            return None, (f"unknown key {unknown[0]!r}"
                          f"{did_you_mean(unknown[0], _HOLIDAY_KEYS)}")
        country, subdiv = value.get("country"), value.get("subdiv")
        if subdiv is not None and not isinstance(subdiv, str):
            return None, f"subdiv must be a string, not {subdiv!r}"
    else:
        return None, ("must be a country code (\"FI\") or a table "
                      "({ country = \"US\", subdiv = \"CA\" })")
    if not isinstance(country, str) or not country.strip():
        return None, "needs a country code, e.g. \"FI\" or { country = \"US\", subdiv = \"CA\" }"
    import holidays

    supported = holidays.list_supported_countries()
    code = country.strip().upper()
    if code not in supported:
        return None, f"unknown country {country!r}{did_you_mean(code, supported)}"
    spec = HolidaySpec(code, subdiv.strip() if subdiv else None)
    if spec.subdiv is not None:
        subdivs = supported[code]
        match = next((s for s in subdivs if s.upper() == spec.subdiv.upper()), None)
        if match is None:
            shown = ", ".join(subdivs[:12]) + (", ..." if len(subdivs) > 12 else "")
            known = f"; {code} has: {shown}" if subdivs else f"; {code} has none"
            return None, f"unknown subdivision {spec.subdiv!r} of {code}{known}"
        spec = HolidaySpec(code, match)
    try:
        holiday_table(spec)
    except ValueError as exc:
        return None, str(exc)
    return spec, None


def _ics(value: Any, base_dir: Path) -> tuple[IcsSource | None, str | None]:
    if not isinstance(value, str) or not value.strip():
        return None, "must be the path of an iCalendar (.ics) file"
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    shown = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"cannot read {shown}: {exc.strerror or exc}"
    except ValueError as exc:
        return None, f"cannot read {shown}: {exc}"
    try:
        source = IcsSource(str(path), data)
    except Exception as exc:  # icalendar raises ValueError and others for bad input
        return None, f"{shown} is not a valid iCalendar file: {one_line(str(exc))[:200]}"
    try:  # recurrence rules are read when asked: ask once now, so a bad RRULE shows here
        source.events_near(date(2000, 1, 1))
    except Exception as exc:
        return None, f"{shown}: cannot read its events: {one_line(str(exc))[:200]}"
    return source, None


__all__ = ["CALENDAR_KEYS", "RawCalendar", "build_calendar", "build_calendars",
           "raw_calendars"]
