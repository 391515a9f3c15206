"""The five time fields of a crontab line, read the way cron reads them, and written
back as a cronctl expression with exactly the same fire times.

Two differences matter:

* **The day rule.** Vixie/Debian cron looks at the field *text*: when day-of-month or
  day-of-week starts with ``*``, a day must match BOTH (AND); otherwise EITHER (OR).
  cronctl looks at the *sets* (docs/behaviour.md#schedules): a field is restricted when its set is
  not the whole range; two restricted fields are OR, else the restricted one decides.
  So ``0 4 1-31 * 1`` is every day in cron (OR with an always-true side) but Mondays in
  cronctl, and ``0 4 */2 * 1`` is odd days that are Mondays in cron (AND) but odd days
  or Mondays in cronctl. :func:`translate_days` rewrites the day fields so cronctl reads
  them as cron did, or says why no single expression can.
* **Spellings.** ``A/N`` runs to the field's end, which for day-of-week is 7 (Sunday) in
  cron but 6 in cronctl (``1/2`` is Mon, Wed, Fri and Sun in cron). Every field is parsed
  here into cron's set and kept as written only when cronctl reads the same set.

The grammar is cronsim's (``*``, ``N``, names, ``A-B``, ``*/N``, ``A-B/N``, ``A/N``,
lists; ``L`` in day-of-month, ``N#k`` and ``NL`` in day-of-week), minus ``LW``, which
cronctl cannot say. ``?`` is not cron syntax and is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cronctl.cron.errors import CronSyntaxError
from cronctl.cron.fields import DAY_NAMES, MONTH_NAMES, SPECS, ParsedField, parse_field

# minute, hour, day-of-month, month, day-of-week: (name, low, high, names)
_FIELDS = (
    ("minute", 0, 59, None),
    ("hour", 0, 23, None),
    ("day-of-month", 1, 31, None),
    ("month", 1, 12, MONTH_NAMES),
    ("day-of-week", 0, 7, DAY_NAMES),
)
MINUTE, HOUR, DOM, MONTH, DOW = range(5)
_MONTH_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DAY_ABBR = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


class FieldError(ValueError):
    """A field cron would not accept, or one cronctl cannot express; one line."""


@dataclass(frozen=True)
class CronField:
    """What one field allows, as cron reads it. Day-of-week values are 0-6 (7 = 0)."""

    values: frozenset[int]
    last_day: bool = False  # L in day-of-month
    nth: frozenset[tuple[int, int]] = frozenset()  # (weekday, k) for N#k
    last_weekdays: frozenset[int] = frozenset()  # N for NL


def _number(index: int, token: str) -> int:
    name, low, high, names = _FIELDS[index]
    if names is not None and token in names:
        return names[token]
    if not token.isascii() or not token.isdigit():
        raise FieldError(f"{name} field: {token or '(nothing)'!r} is not a number"
                         + (" or a name" if names else ""))
    value = int(token)
    if not low <= value <= high:
        raise FieldError(f"{name} field: {value} is out of range {low}-{high}")
    return value


def _term(index: int, term: str) -> CronField:
    """One comma-separated term (upper case)."""
    name, low, high, _ = _FIELDS[index]
    if term == "*":
        return CronField(_full(index))
    if term == "?":
        raise FieldError(f"{name} field: ? is not cron syntax (crontab rejects it); write *")
    if index == DOW and term.endswith("L"):
        return CronField(frozenset(), last_weekdays=frozenset({_number(DOW, term[:-1]) % 7}))
    if index == DOW and "#" in term:
        day, _, k = term.partition("#")
        if not (k.isascii() and k.isdigit()) or not 1 <= int(k) <= 5:
            raise FieldError(f"{name} field: {term}: the k of N#k must be 1-5")
        return CronField(frozenset(), nth=frozenset({(_number(DOW, day) % 7, int(k))}))
    if index == DOM and (term in ("L", "LW") or term.startswith(("L/", "LW/"))):
        if "W" in term:
            raise FieldError(f"{name} field: {term} (last weekday of the month) has no "
                             "cronctl equivalent")
        return CronField(frozenset(), last_day=True)  # cron reads L/N as L
    base, slash, step_text = term.partition("/")
    if slash:
        if not (step_text.isascii() and step_text.isdigit()) or int(step_text) == 0:
            raise FieldError(f"{name} field: step {step_text!r} in {term} must be a whole "
                             "number >= 1")
        step = int(step_text)
    else:
        step = 1
    if base == "*":
        first, last = low, high
    elif "-" in base:
        a, _, b = base.partition("-")
        first, last = _number(index, a), _number(index, b)
        if last < first:
            raise FieldError(f"{name} field: {base} is a descending range")
    else:
        first = _number(index, base)
        last = high if slash else first  # A/N runs to the end (day-of-week: to 7)
    found = range(first, last + 1, step)
    return CronField(frozenset(v % 7 for v in found) if index == DOW else frozenset(found))


def parse_cron_field(index: int, text: str) -> CronField:
    """Field ``index`` (:data:`MINUTE` ... :data:`DOW`) as cron reads it."""
    values: set[int] = set()
    last_day = False
    nth: set[tuple[int, int]] = set()
    last_weekdays: set[int] = set()
    for term in text.upper().split(","):
        part = _term(index, term)
        values |= part.values
        last_day = last_day or part.last_day
        nth |= part.nth
        last_weekdays |= part.last_weekdays
    return CronField(frozenset(values), last_day, frozenset(nth), frozenset(last_weekdays))


def _full(index: int) -> frozenset[int]:
    _, low, high, _ = _FIELDS[index]
    return frozenset(range(low, 7 if index == DOW else high + 1))


def _cronctl_reads(index: int, text: str) -> CronField | None:
    """What cronctl makes of ``text`` in this field, or ``None`` if it rejects it."""
    try:
        parsed: ParsedField = parse_field(SPECS[index + 1], text)
    except CronSyntaxError:
        return None
    return CronField(parsed.values, parsed.last_day, parsed.nth, parsed.last_weekdays)


def _ranges(values: Iterable[int]) -> list[str]:
    ordered = sorted(values)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(v) for v in ordered[i:j + 1])
        i = j + 1
    return parts


def spell(index: int, field: CronField) -> str:
    """A canonical cronctl spelling of ``field``."""
    if field.values == _full(index):
        return "*"
    parts = _ranges(field.values)
    if field.last_day:
        parts.append("L")
    parts += [f"{_DAY_ABBR[w]}#{k}" for w, k in sorted(field.nth)]
    parts += [f"{_DAY_ABBR[w]}L" for w in sorted(field.last_weekdays)]
    return ",".join(parts)


def cronctl_text(index: int, text: str, field: CronField) -> str:
    """``text`` (upper case) when cronctl reads it as cron does, else a spelling that it
    does."""
    upper = text.upper()
    return upper if _cronctl_reads(index, upper) == field else spell(index, field)


# --- the day rule -------------------------------------------------------------------------

Shape = tuple[int, int]  # (length of the month, weekday of its 1st; 0 = Sunday)


def month_shapes(months: frozenset[int]) -> list[Shape]:
    """Every (length, first weekday) a month of ``months`` can have: what decides which of
    its days match the day fields."""
    lengths = set()
    for month in months:
        lengths.add(_MONTH_DAYS[month])
        if month == 2:
            lengths.add(28)
    return [(length, first) for length in sorted(lengths) for first in range(7)]


def dom_ok(f: CronField, day: int, length: int) -> bool:
    return day in f.values or (f.last_day and day == length)


def dow_ok(f: CronField, day: int, weekday: int, length: int) -> bool:
    return (weekday in f.values or (weekday, (day - 1) // 7 + 1) in f.nth
            or (weekday in f.last_weekdays and day + 7 > length))


DayTest = Callable[[int, int, int], bool]  # (day, weekday, length) -> matches


def _same_days(a: DayTest, b: DayTest, shapes: list[Shape]) -> bool:
    return all(a(day, (first + day - 1) % 7, length) == b(day, (first + day - 1) % 7, length)
               for length, first in shapes for day in range(1, length + 1))


@dataclass(frozen=True)
class Days:
    """The day fields to write (``dom``, ``dow``), or ``problem`` when none exist."""

    dom: str = "*"
    dow: str = "*"
    problem: str | None = None


def translate_days(dom_text: str, dow_text: str, dom: CronField, dow: CronField,
                   months: frozenset[int]) -> Days:
    """Day fields that cronctl reads as cron reads ``dom_text dow_text``."""
    both = dom_text.startswith("*") or dow_text.startswith("*")  # cron's AND
    dom_out, dow_out = cronctl_text(DOM, dom_text, dom), cronctl_text(DOW, dow_text, dow)
    # cronctl's "restricted", decided on the sets it reads (L, #k and NL always restrict).
    dom_r = dom.last_day or dom.values != _full(DOM)
    dow_r = bool(dow.nth or dow.last_weekdays) or dow.values != _full(DOW)
    if not both:
        # OR: with one side always true cron fires every day; cronctl would let the
        # other side decide alone.
        return Days(dom_out, dow_out) if dom_r and dow_r else Days()
    if not (dom_r and dow_r):
        return Days(dom_out, dow_out)  # AND with an always-true side: the other decides
    # AND of two restricted sets: cronctl would read OR. Say it another way where the
    # days allow, checked day by day over every month shape: one field alone (when the
    # other allows every day the first does), or the parts cronctl can say (days that
    # match on any weekday; whole weeks of the month as W#k, e.g. 1-7 AND */7 = SUN#1).
    shapes = month_shapes(months)

    def cron(day: int, weekday: int, length: int) -> bool:
        return dom_ok(dom, day, length) and dow_ok(dow, day, weekday, length)

    if _same_days(cron, lambda d, w, n: dow_ok(dow, d, w, n), shapes):
        return Days("*", dow_out)
    if _same_days(cron, lambda d, w, n: dom_ok(dom, d, n), shapes):
        return Days(dom_out, "*")
    days_part, weeks_part = _and_parts(dom, dow, shapes)
    if days_part.values or days_part.last_day or weeks_part.nth or weeks_part.last_weekdays:
        dom_text_out = spell(DOM, days_part) if days_part != CronField(frozenset()) else "*"
        dow_text_out = spell(DOW, weeks_part) if weeks_part != CronField(frozenset()) else "*"

        def parts(day: int, weekday: int, length: int) -> bool:
            return dom_ok(days_part, day, length) or dow_ok(weeks_part, day, weekday, length)

        if _same_days(cron, parts, shapes):
            return Days(dom_text_out, dow_text_out)
    if not any(cron(day, (first + day - 1) % 7, length)
               for length, first in shapes for day in range(1, length + 1)):
        return Days(problem="never fires: no day matches both day fields")
    return Days(problem=(
        f"cron fires only on days matching both {dom_text} (day of month) and {dow_text} "
        "(day of week), because one starts with '*'; cronctl reads two restricted day "
        "fields as either/or, and no single cronctl expression has exactly these days"))


def _and_parts(dom: CronField, dow: CronField, shapes: list[Shape]
               ) -> tuple[CronField, CronField]:
    """The pieces of cron's AND that cronctl can say: the days of the month that match on
    every weekday (a day-of-month field), and the weekday items (``W#k``, ``WL``) whose
    days all match (a day-of-week field). cronctl fires on their union (OR, or the one
    that is not empty); :func:`translate_days` checks that it is all of cron's days."""

    def both(day: int, weekday: int, length: int) -> bool:
        return dom_ok(dom, day, length) and dow_ok(dow, day, weekday, length)

    def any_weekday(day: int) -> bool:  # day matches whatever its weekday, where it exists
        return all(both(day, w, length) for length, _ in shapes if day <= length
                   for w in range(7))

    days = frozenset(d for d in range(1, 32) if any(d <= n for n, _ in shapes)
                     and any_weekday(d))
    last_day = all(both(n, w, n) for n, _ in shapes for w in range(7))

    def covers(first: int, last: int) -> bool:
        """Whether dom allows every existing day of first..last (<= 0: from the end)."""
        return all(dom_ok(dom, day, length) for length, _ in shapes
                   for day in range(first if first > 0 else length + first,
                                    min(last if last > 0 else length, length) + 1))

    weeks = [k for k in range(1, 6) if covers(7 * k - 6, 7 * k)]
    nth = {(w, k) for w in dow.values for k in weeks}
    nth |= {(w, k) for w, k in dow.nth if k in weeks}
    nth |= {(w, 5) for w in dow.last_weekdays if 5 in weeks}  # days 29-31 are in the last 7
    # A week whose every day is already in ``days`` needs no W#k.
    nth = {(w, k) for w, k in nth
           if not all(d in days for d in range(7 * k - 6, 7 * k + 1)
                      if any(d <= n for n, _ in shapes))}
    last = set()
    if covers(-6, 0):
        last = set(dow.values) | set(dow.last_weekdays)
        last |= {w for w in range(7) if {(w, 4), (w, 5)} <= dow.nth}
    return (CronField(days, last_day=last_day),
            CronField(frozenset(), nth=frozenset(nth), last_weekdays=frozenset(last)))
