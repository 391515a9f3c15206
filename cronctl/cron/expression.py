"""``CronExpression``: a parsed, immutable cron expression and its wall-clock search.

The search here knows nothing about time zones: it works on *wall seconds*, the number of
seconds since 1970-01-01 00:00 of a naive local calendar. ``schedule.py`` maps wall seconds
to UTC instants and resolves DST gaps and folds around it.
"""

from __future__ import annotations

from datetime import date
from typing import Any, NoReturn

from cronctl.cron.errors import CronSyntaxError
from cronctl.cron.fields import DAY_OF_MONTH, SPECS, ParsedField, has_hash, parse_field

MACROS = {
    "@yearly": "0 0 0 1 1 *",
    "@annually": "0 0 0 1 1 *",
    "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0",
    "@daily": "0 0 0 * * *",
    "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}

_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
# Searches stop here so that "first day of next year" never leaves datetime's range.
_MAX_DAY = date(9999, 1, 1).toordinal() - _EPOCH_ORDINAL
# Longest each month can be in any year: a day-of-month beyond this never exists.
_MONTH_MAX_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MONTH_ABBR = ("", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT",
               "NOV", "DEC")
_DAY_CACHE_LIMIT = 4096
_SHARED_DAY_CACHES: dict[tuple[object, ...], dict[int, tuple[int, ...]]] = {}  # by day fields


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return _MONTH_MAX_DAYS[month]


_TABLES: dict[tuple[frozenset[int], int], tuple[int, ...]] = {}


def _next_table(values: frozenset[int], size: int) -> tuple[int, ...]:
    """``table[i]`` = smallest allowed value >= i, or -1; one extra slot at ``size`` so
    callers can look up ``i + 1`` without a bounds check.

    Cached per set: most expressions share their sets ({0}, everything, ...), and
    building a table is most of what parsing costs.
    """
    key = (values, size)
    found = _TABLES.get(key)
    if found is not None:
        return found
    table = [-1] * (size + 1)
    following = -1
    for i in range(size - 1, -1, -1):
        if i in values:
            following = i
        table[i] = following
    result = tuple(table)
    if len(_TABLES) >= _DAY_CACHE_LIMIT:
        _TABLES.clear()
    _TABLES[key] = result
    return result


def _split(text: str) -> list[str]:
    stripped = text.strip()
    if not stripped:
        raise CronSyntaxError("cron expression is empty", text=text)
    lowered = stripped.lower()
    if lowered.startswith("@"):
        if lowered.startswith("@every"):
            raise CronSyntaxError(
                f"{stripped!r} is an interval, not a cron expression; use Schedule() for it",
                text=text,
            )
        if lowered not in MACROS:
            known = ", ".join(MACROS)
            raise CronSyntaxError(f"{stripped} is not a known macro (use one of {known})",
                                  text=text)
        return MACROS[lowered].split()
    parts = stripped.split()
    if len(parts) == 5:
        parts.insert(0, "0")
    elif len(parts) != 6:
        raise CronSyntaxError(
            f"expected 5 or 6 fields (second minute hour day-of-month month day-of-week), "
            f"got {len(parts)} in {stripped!r}",
            text=text,
        )
    return parts


class CronExpression:
    """A parsed cron expression (docs/behaviour.md#schedules). Immutable and hashable.

    Equality is on what the expression fires on (the value sets, ``L``/``#``/``NL`` and
    whether the hour field is periodic), so ``*/1`` equals ``*``. ``text`` is the
    normalized six-field spelling: macros expanded, names upper-cased, ``?`` as ``*``.

    ``H`` (docs/behaviour.md#spread-calendars-and-dependencies) needs the id of the job it is for:
    ``CronExpression("H H(1-5) * * *", hash_id="backup")``. Then ``text`` is the resolved
    expression (``"0 37 3 * * *"``-style: what fires), ``written`` the normalized text with
    its ``H`` items as written (``"0 H H(1-5) * * *"``) and ``hash_id`` the id; without
    an ``H``, ``written == text`` and ``hash_id`` is ``None``. An ``H`` without an id
    raises :class:`~cronctl.cron.hashspread.MissingHashIdError`, a
    :class:`CronSyntaxError`. An ``H`` hour is a fixed-time hour for the DST policies
    (its text does not start with ``*``): ``H/6`` is four fixed hours a day.
    """

    __slots__ = (
        "text", "written", "hash_id", "seconds", "minutes", "hours", "days", "months",
        "weekdays", "last_day",
        "nth_weekdays", "last_weekdays", "dom_restricted", "dow_restricted",
        "periodic_hours", "_key", "_ns", "_nm", "_nh", "_first_sod_of_hour",
        "_first_sod", "_next_month", "_first_month", "_day_cache",
    )

    text: str
    written: str
    hash_id: str | None
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    last_day: bool
    nth_weekdays: frozenset[tuple[int, int]]
    last_weekdays: frozenset[int]
    dom_restricted: bool
    dow_restricted: bool
    periodic_hours: bool
    _key: tuple[object, ...]
    _ns: tuple[int, ...]
    _nm: tuple[int, ...]
    _nh: tuple[int, ...]
    _first_sod_of_hour: int
    _first_sod: int
    _next_month: tuple[int, ...]
    _first_month: int
    _day_cache: dict[int, tuple[int, ...]]

    def __init__(self, text: str, hash_id: str | None = None) -> None:
        if not isinstance(text, str):
            raise TypeError(f"CronExpression needs a str, got {type(text).__name__}")
        if hash_id is not None and not isinstance(hash_id, str):
            raise TypeError(f"hash_id must be a str, got {type(hash_id).__name__}")
        raw = _split(text)
        written: str | None = None
        if has_hash(raw):
            from cronctl.cron.hashspread import resolve_fields  # hashlib only for H

            written = " ".join("*" if part == "?" else part.upper() for part in raw)
            raw = resolve_fields(raw, hash_id)
        fields: list[ParsedField] = [
            parse_field(spec, part) for spec, part in zip(SPECS, raw, strict=True)
        ]
        sec, minute, hour, dom, month, dow = fields
        put = object.__setattr__
        put(self, "text", " ".join(f.text for f in fields))
        put(self, "written", self.text if written is None else written)
        put(self, "hash_id", None if written is None else hash_id)
        put(self, "seconds", sec.values)
        put(self, "minutes", minute.values)
        put(self, "hours", hour.values)
        put(self, "days", dom.values)
        put(self, "months", month.values)
        put(self, "weekdays", dow.values)
        put(self, "last_day", dom.last_day)
        put(self, "nth_weekdays", dow.nth)
        put(self, "last_weekdays", dow.last_weekdays)
        # docs/behaviour.md#day-matching: "restricted" is decided on the sets, not on the text
        # (unlike Vixie cron), so equal sets behave equally; L, #k and NL always restrict.
        dom_r = dom.last_day or dom.values != frozenset(range(1, 32))
        dow_r = bool(dow.nth or dow.last_weekdays) or dow.values != frozenset(range(7))
        put(self, "dom_restricted", dom_r)
        put(self, "dow_restricted", dow_r)
        # DST policy "auto" depends on how the hour field was *written*
        # (docs/behaviour.md#time-zones-and-daylight-saving): "*", "*/2" are periodic, "0-23" is a
        # fixed list of hours.
        put(self, "periodic_hours", raw[2].startswith("*"))
        put(self, "_key", (
            sec.values, minute.values, hour.values, dom.values, dom.last_day, month.values,
            dow.values, dow.nth, dow.last_weekdays, raw[2].startswith("*"),
        ))
        self._check_days_exist(dom, month)
        self._build_tables()

    # -- construction helpers ---------------------------------------------------------

    def _check_days_exist(self, dom: ParsedField, month: ParsedField) -> None:
        """Reject day-of-month sets that no month of the month set ever has (``30 2``).

        Only when day-of-week does not widen the match: with both restricted the OR rule
        can still fire on weekdays.
        """
        if not self.dom_restricted or self.dow_restricted or dom.last_day:
            return
        longest = max(_MONTH_MAX_DAYS[m] for m in self.months)
        if min(self.days) <= longest:
            return
        names = ",".join(_MONTH_ABBR[m] for m in sorted(self.months))
        raise CronSyntaxError(
            f"day-of-month field: {dom.text} never exists in {names}; "
            "the expression would never fire",
            field=DAY_OF_MONTH.name,
            text=dom.text,
        )

    def _build_tables(self) -> None:
        put = object.__setattr__
        put(self, "_ns", _next_table(self.seconds, 60))
        put(self, "_nm", _next_table(self.minutes, 60))
        put(self, "_nh", _next_table(self.hours, 24))
        first_s = min(self.seconds)
        first_m = min(self.minutes)
        put(self, "_first_sod_of_hour", first_m * 60 + first_s)
        put(self, "_first_sod", min(self.hours) * 3600 + first_m * 60 + first_s)
        put(self, "_next_month", _next_table(self.months, 13))
        put(self, "_first_month", min(self.months))
        # Expressions with the same day fields share their month tables: a job set's
        # expressions mostly differ in their time fields (10,000 daily jobs at
        # different minutes build the tables of "* * *" once, not 10,000 times).
        day_key = (self.days, self.last_day, self.weekdays, self.nth_weekdays,
                   self.last_weekdays, self.dom_restricted, self.dow_restricted)
        cache = _SHARED_DAY_CACHES.get(day_key)
        if cache is None:
            if len(_SHARED_DAY_CACHES) >= _DAY_CACHE_LIMIT:
                _SHARED_DAY_CACHES.clear()  # (expressions keep the dicts they hold)
            cache = _SHARED_DAY_CACHES[day_key] = {}
        put(self, "_day_cache", cache)

    # -- value semantics ---------------------------------------------------------------

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("CronExpression is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("CronExpression is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CronExpression):
            return NotImplemented
        return bool(self._key == other._key)

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        if self.hash_id is not None:
            return f"CronExpression({self.written!r}, hash_id={self.hash_id!r})"
        return f"CronExpression({self.text!r})"

    def __str__(self) -> str:
        return self.text

    def __reduce__(self) -> tuple[Any, ...]:
        return (CronExpression, (self.written, self.hash_id))

    def explain(self) -> str:
        """A plain-English reading, e.g. ``"At 08:00:00, Monday through Friday"``."""
        from cronctl.cron.explain import explain

        return explain(self)

    # -- matching ------------------------------------------------------------------------

    def matches_day(self, year: int, month: int, day: int) -> bool:
        """Whether the day fields (and month) allow this calendar day."""
        if month not in self.months:
            return False
        return self._day_table(year, month)[day] == day

    def matches_wall(self, year: int, month: int, day: int, hour: int, minute: int,
                     second: int) -> bool:
        """Whether a local wall-clock time matches every field."""
        return (second in self.seconds and minute in self.minutes and hour in self.hours
                and self.matches_day(year, month, day))

    def _day_table(self, year: int, month: int) -> tuple[int, ...]:
        """For one month: ``table[d]`` = first matching day >= d, or -1 (d in 0..32)."""
        key = year * 16 + month
        cache: dict[int, tuple[int, ...]] = self._day_cache
        table = cache.get(key)
        if table is not None:
            return table
        length = _days_in_month(year, month)
        first_weekday = (date(year, month, 1).weekday() + 1) % 7  # cron: 0 = Sunday
        matching = set()
        for day in range(1, length + 1):
            if self._day_matches(day, (first_weekday + day - 1) % 7, length):
                matching.add(day)
        table = _next_table(frozenset(matching), 32)
        if len(cache) >= _DAY_CACHE_LIMIT:
            cache.clear()
        cache[key] = table
        return table

    def _day_matches(self, day: int, weekday: int, length: int) -> bool:
        dom_ok = day in self.days or (self.last_day and day == length)
        dow_ok = (
            weekday in self.weekdays
            or (weekday, (day - 1) // 7 + 1) in self.nth_weekdays
            or (weekday in self.last_weekdays and day + 7 > length)
        )
        if self.dom_restricted and self.dow_restricted:
            # docs/behaviour.md#day-matching: both restricted -> either matches
            return dom_ok or dow_ok
        if self.dom_restricted:
            return dom_ok
        if self.dow_restricted:
            return dow_ok
        return True

    def next_wall(self, wall: int, end: int) -> int | None:
        """The first matching wall second in ``[wall, end)``, or ``None``.

        Jumps field by field (month, day, then time of day through lookup tables) rather
        than scanning, so a call costs a handful of table reads.
        """
        days, sod = divmod(wall, 86400)
        while True:
            if days * 86400 + sod >= end or days >= _MAX_DAY:
                return None
            current = date.fromordinal(days + _EPOCH_ORDINAL)
            year, month = current.year, current.month
            if self._next_month[month] != month:
                next_month = self._next_month[month]
                if next_month < 0:
                    year += 1
                    next_month = self._first_month
                days = date(year, next_month, 1).toordinal() - _EPOCH_ORDINAL
                sod = 0
                continue
            table = self._day_table(year, month)
            day = current.day
            next_day = table[day]
            if next_day != day:
                if next_day < 0:
                    if month == 12:
                        days = date(year + 1, 1, 1).toordinal() - _EPOCH_ORDINAL
                    else:
                        days = date(year, month + 1, 1).toordinal() - _EPOCH_ORDINAL
                    sod = 0
                    continue
                days += next_day - day
                sod = 0
            found = self._next_sod(sod)
            if found < 0:
                days += 1
                sod = 0
                continue
            result = days * 86400 + found
            return result if result < end else None

    def _next_sod(self, sod: int) -> int:
        """First matching second-of-day >= ``sod`` on a matching day, or -1."""
        if sod == 0:
            return self._first_sod
        hour, rest = divmod(sod, 3600)
        minute, second = divmod(rest, 60)
        next_hour = self._nh[hour]
        if next_hour == hour:
            next_minute = self._nm[minute]
            if next_minute == minute:
                next_second = self._ns[second]
                if next_second >= 0:
                    return sod - second + next_second
                next_minute = self._nm[minute + 1]
            if next_minute >= 0:
                return hour * 3600 + next_minute * 60 + self._ns[0]
            next_hour = self._nh[hour + 1]
        if next_hour < 0:
            return -1
        return next_hour * 3600 + self._first_sod_of_hour


_PARSED: dict[str, CronExpression] = {}
_PARSED_LIMIT = 16384  # ~0.5 KB each (their tables are shared): a few MB at most


_PARSED_HASHED: dict[tuple[str, str], CronExpression] = {}


def parse_cron(text: str, hash_id: str | None = None) -> CronExpression:
    """``CronExpression(text, hash_id)``, cached: expressions are immutable, and one job
    set parses each of its expressions several times (validation, the core's schedules,
    every reload). Expressions without ``H`` are cached by text alone (``hash_id`` does
    not change them), those with ``H`` by text and id. A syntax error is raised each time
    (not cached)."""
    expr = _PARSED.get(text)
    if expr is not None:
        return expr  # no H: only those are cached by text alone
    if hash_id is not None:
        expr = _PARSED_HASHED.get((text, hash_id))
        if expr is not None:
            return expr
    expr = CronExpression(text, hash_id)
    cache: dict[Any, CronExpression] = _PARSED if expr.hash_id is None else _PARSED_HASHED
    key: Any = text if expr.hash_id is None else (text, hash_id)
    if len(cache) >= _PARSED_LIMIT:
        cache.clear()
    cache[key] = expr
    return expr

