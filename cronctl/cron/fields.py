"""Parsing one field of a cron expression into the set of values it allows.

Every field is parsed to plain sets of integers; everything else (matching, DST, English)
works on those sets, so two spellings of the same set behave the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping

from cronctl.cron.errors import CronSyntaxError

MONTH_NAMES: Mapping[str, int] = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
        start=1,
    )
}
DAY_NAMES: Mapping[str, int] = {
    name: number
    for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))
}


class FieldSpec:
    """One of the six positions.

    ``high`` is the largest value the text may name; ``top`` is where ``*`` and ``A/N`` stop.
    They differ only for day-of-week, where 7 (= Sunday) is accepted but ``*`` means 0-6.
    (A plain class, not a dataclass: this module is on ``cronctl next``'s start-up path.)
    """

    __slots__ = ("name", "low", "high", "top", "names")

    def __init__(self, name: str, low: int, high: int, top: int,
                 names: Mapping[str, int] | None = None) -> None:
        self.name = name
        self.low = low
        self.high = high
        self.top = top
        self.names: Mapping[str, int] = names if names is not None else {}

    def error(self, message: str, text: str) -> CronSyntaxError:
        # docs/behaviour.md#cron-expressions: the error names the field, the offending text and the
        # allowed range.
        allowed = f"{self.low}-{self.high}"
        if allowed not in message and "out of range" not in message:
            message += f" (allowed: {allowed})"
        return CronSyntaxError(f"{self.name} field: {message}", field=self.name, text=text)

    def describe_values(self) -> str:
        if self.names is MONTH_NAMES:
            return f"a number {self.low}-{self.high} or a month name JAN-DEC"
        if self.names is DAY_NAMES:
            return f"a number {self.low}-{self.high} or a day name SUN-SAT"
        return f"a number {self.low}-{self.high}"


SECOND = FieldSpec("second", 0, 59, 59)
MINUTE = FieldSpec("minute", 0, 59, 59)
HOUR = FieldSpec("hour", 0, 23, 23)
DAY_OF_MONTH = FieldSpec("day-of-month", 1, 31, 31)
MONTH = FieldSpec("month", 1, 12, 12, MONTH_NAMES)
DAY_OF_WEEK = FieldSpec("day-of-week", 0, 7, 6, DAY_NAMES)
SPECS = (SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK)


class ParsedField:
    """What one field allows. ``values`` for day-of-week are 0-6 (7 folded onto 0).

    ``last_day`` is ``L`` in day-of-month; ``nth`` holds ``(weekday, k)`` for ``N#k``;
    ``last_weekdays`` holds N for ``NL``. Treated as immutable (results are cached).
    """

    __slots__ = ("values", "text", "last_day", "nth", "last_weekdays")

    def __init__(
        self,
        values: frozenset[int],
        text: str,
        last_day: bool = False,
        nth: frozenset[tuple[int, int]] = frozenset(),
        last_weekdays: frozenset[int] = frozenset(),
    ) -> None:
        self.values = values
        self.text = text
        self.last_day = last_day
        self.nth = nth
        self.last_weekdays = last_weekdays


def _value(spec: FieldSpec, token: str, item: str) -> int:
    """One number or name, range-checked against the field."""
    if not token:
        raise spec.error(f"{item!r} is missing a value", item)
    upper = token.upper()
    if token.isascii() and token.isdigit():
        number = int(token)
    elif upper in spec.names:
        number = spec.names[upper]
    else:
        raise spec.error(f"{token} is not {spec.describe_values()}", item)
    if not spec.low <= number <= spec.high:
        raise spec.error(f"{token} is out of range {spec.low}-{spec.high}", item)
    return number


def _step(spec: FieldSpec, token: str, item: str) -> int:
    if not (token.isascii() and token.isdigit()):
        raise spec.error(f"step {token!r} in {item} is not a whole number", item)
    step = int(token)
    if step < 1:
        raise spec.error(f"step {token} in {item} must be at least 1", item)
    return step


def _name_like(spec: FieldSpec, token: str, number: int) -> str:
    """Spell ``number`` the way the user spelled ``token`` (name or digits), for hints."""
    if token.isdigit() or not spec.names:
        return str(number)
    for name, value in spec.names.items():
        if value == number:
            return name
    return str(number)


def _range_item(spec: FieldSpec, item: str) -> set[int]:
    """``*``, ``N``, ``A-B``, ``*/N``, ``A-B/N`` or ``A/N``."""
    base, slash, step_text = item.partition("/")
    step = _step(spec, step_text, item) if slash else 1
    if base == "*":
        first, last = spec.low, spec.top
    elif "-" in base:
        a_text, _, b_text = base.partition("-")
        first = _value(spec, a_text, item)
        last = _value(spec, b_text, item)
        if first > last:
            upper_a, upper_b = a_text.upper(), b_text.upper()
            if slash:
                hint = "a range needs A <= B"
            else:
                # Suggest the wrap-around the user probably meant, spelled their way.
                top = _name_like(spec, a_text, spec.top)
                low = _name_like(spec, b_text, spec.low)
                tail = low if last == spec.low else f"{low}-{upper_b}"
                if first > spec.top:  # 7-5 in day-of-week: 7 is Sunday = 0, so 0-5
                    hint = f"write {tail}"
                elif first == spec.top:  # SAT-MON: no 'SAT-SAT'
                    hint = f"write {upper_a},{tail}"
                else:
                    hint = f"write {upper_a}-{top},{tail}"
            raise spec.error(f"{upper_a}-{upper_b} is a descending range; {hint}", item)
    else:
        first = _value(spec, base, item)
        # ``A/N`` runs from A to the end of the field; a bare ``N`` is just N.
        last = spec.top if slash else first
        if slash and first > spec.top:
            last = first
    return set(range(first, last + 1, step))


def is_hash_item(item: str) -> bool:
    """Whether one comma-list item is an ``H`` item
    (docs/behaviour.md#spread-calendars-and-dependencies). No month or day name starts with H, so
    the first letter decides."""
    return item[:1] in ("H", "h")


def has_hash(fields: list[str]) -> bool:
    """Whether any field of an expression holds an ``H`` item."""
    return any(is_hash_item(item) for text in fields for item in text.split(","))


_PARSED: dict[tuple[str, str], ParsedField] = {}
_PARSED_LIMIT = 4096


def parse_field(spec: FieldSpec, text: str) -> ParsedField:
    """Parse one whitespace-free field; raises :class:`CronSyntaxError` naming the field.

    Results are immutable and cached: job sets repeat the same few fields ("0", "*").
    """
    key = (spec.name, text)
    found = _PARSED.get(key)
    if found is None:
        found = _parse_field(spec, text)
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[key] = found
    return found


def _parse_field(spec: FieldSpec, text: str) -> ParsedField:
    if text == "?":
        if spec not in (DAY_OF_MONTH, DAY_OF_WEEK):
            raise spec.error("? is only allowed in day-of-month and day-of-week", text)
        return ParsedField(frozenset(range(spec.low, spec.top + 1)), "*")
    values: set[int] = set()
    last_day = False
    nth: set[tuple[int, int]] = set()
    last_weekdays: set[int] = set()
    for item in text.split(","):
        if not item:
            raise spec.error(f"{text!r} has an empty list item", text)
        upper = item.upper()
        if upper == "?":
            raise spec.error("? must be the whole field, not part of a list", text)
        if spec is DAY_OF_MONTH and upper == "L":
            last_day = True
        elif spec is DAY_OF_WEEK and "#" in item:
            day_text, _, k_text = item.partition("#")
            day = _value(spec, day_text, item) % 7
            if not (k_text.isascii() and k_text.isdigit()) or not 1 <= int(k_text) <= 5:
                raise spec.error(f"{k_text or '(nothing)'} in {upper} is out of range 1-5", item)
            nth.add((day, int(k_text)))
        elif spec is DAY_OF_WEEK and upper.endswith("L"):
            if upper == "L":
                raise spec.error("L needs a weekday before it (5L or FRIL = last Friday)", item)
            last_weekdays.add(_value(spec, item[:-1], item) % 7)
        elif "L" in upper and spec in (DAY_OF_MONTH, DAY_OF_WEEK):
            where = "alone in day-of-month" if spec is DAY_OF_MONTH else "after a weekday"
            raise spec.error(f"{item} is not supported (L is allowed only {where})", item)
        else:
            found = _range_item(spec, item)
            if spec is DAY_OF_WEEK:
                found = {v % 7 for v in found}
            values |= found
    return ParsedField(
        values=frozenset(values),
        text=text.upper(),
        last_day=last_day,
        nth=frozenset(nth),
        last_weekdays=frozenset(last_weekdays),
    )
