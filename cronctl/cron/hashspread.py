"""Jenkins-style hash spread: ``H`` in a field stands for values chosen from the job id.

docs/behaviour.md#spread-calendars-and-dependencies is the contract, and it is exact, because every
node and every restart must pick the same values without talking to each other. For field number
``i`` (0 = second ... 5 = day-of-week, in the six-field order):

    h_i = int.from_bytes(sha256(f"{job_id}\\0{i}".encode()).digest()[:8], "big")

* ``H`` is ``lo + h_i % (hi - lo + 1)`` over the field's H range;
* ``H(a-b)`` is ``a + h_i % (b - a + 1)``;
* ``H/n`` is ``s, s+n, s+2n, ...`` up to ``hi``, with ``s = lo + h_i % n``;
* ``H(a-b)/n`` is the same from ``a + h_i % n`` up to ``b``.

The H ranges are the field ranges, except day-of-month (1-28: a day every month has, so a
hashed monthly job never skips February) and day-of-week (0-6: 7 is Sunday again).

A five-field expression is read with second = 0 first, so its fields keep their six-field
numbers: a five-field ``H`` minute uses ``i = 1``, exactly like the same ``H`` written as
``0 H ...``. The two spellings of one job's schedule therefore resolve alike.

Resolution is textual: each ``H`` item becomes the plain item it stands for (``37``, or
``7-59/15`` for a step), and the resolved text is parsed as usual. Everything downstream
(matching, DST, English, the store's copy of the expression) sees an ordinary expression.

Steps longer than the range (``H/90`` in seconds) are refused rather than read like
``*/90``: ``s = lo + h_i % n`` would then fall outside the field for some ids, so whether a
job fires at all would depend on its name.

Imported only when an expression holds an ``H`` (``cronctl next '0 0 8 * * *'`` does not
load hashlib).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from cronctl.cron.errors import CronSyntaxError, MissingHashIdError
from cronctl.cron.fields import SPECS, FieldSpec, is_hash_item

# Where H lands, by field number (second, minute, hour, day-of-month, month, day-of-week).
H_RANGES: tuple[tuple[int, int], ...] = ((0, 59), (0, 59), (0, 23), (1, 28), (1, 12), (0, 6))
_FORMS = "H, H(a-b), H/n or H(a-b)/n"
_ITEM = re.compile(r"H(?:\((?P<range>[^()]*)\))?(?:/(?P<step>.*))?", re.IGNORECASE)


def field_hash(job_id: str, index: int) -> int:
    """``h_i`` of docs/behaviour.md#spread-calendars-and-dependencies for field number ``index`` (0
    = second)."""
    digest = hashlib.sha256(f"{job_id}\0{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _error(spec: FieldSpec, message: str, item: str) -> CronSyntaxError:
    return CronSyntaxError(f"{spec.name} field: {message}", field=spec.name, text=item)


def _number(spec: FieldSpec, token: str, item: str, low: int, high: int) -> int:
    """One bound of ``H(a-b)``: a number or a name, inside the field's H range."""
    upper = token.strip().upper()
    if upper.isascii() and upper.isdigit():
        value = int(upper)
    elif upper in spec.names:
        value = spec.names[upper]
    else:
        shown = token or "(nothing)"
        raise _error(spec, f"{shown} in {item} is not {spec.describe_values()} "
                           f"(allowed for H: {low}-{high})", item)
    if not low <= value <= high:
        raise _error(spec, f"{token} in {item} is out of range {low}-{high}", item)
    return value


def _step(spec: FieldSpec, token: str, item: str, span: int) -> int:
    if not (token.isascii() and token.isdigit()):
        raise _error(spec, f"step {token or '(nothing)'!r} in {item} is not a whole number "
                           f"(allowed: 1-{span})", item)
    step = int(token)
    if not 1 <= step <= span:
        raise _error(spec, f"step {token} in {item} is out of range 1-{span}", item)
    return step


def resolve_item(index: int, item: str, job_id: str) -> str:
    """One ``H`` item of field ``index`` as the plain item it stands for for ``job_id``."""
    spec = SPECS[index]
    low, high = H_RANGES[index]
    found = _ITEM.fullmatch(item)
    if found is None:
        raise _error(spec, f"{item} is not {_FORMS} (allowed for H: {low}-{high})", item)
    bounds, step_text = found.group("range"), found.group("step")
    first, last = low, high
    if bounds is not None:
        a_text, dash, b_text = bounds.partition("-")
        if not dash:
            raise _error(spec, f"{item} needs a range inside the parentheses, e.g. "
                               f"H({low}-{high}) (allowed: {low}-{high})", item)
        first = _number(spec, a_text, item, low, high)
        last = _number(spec, b_text, item, low, high)
        if first > last:
            raise _error(spec, f"{item} is a descending range; H(a-b) needs a <= b "
                               f"(allowed: {low}-{high})", item)
    h = field_hash(job_id, index)
    if step_text is None:
        return str(first + h % (last - first + 1))
    step = _step(spec, step_text, item, last - first + 1)
    start = first + h % step
    if start + step > last:
        return str(start)
    return f"{start}-{last}/{step}"


def resolve_field(index: int, text: str, job_id: str) -> str:
    """Field ``index`` with each ``H`` item of its comma list resolved; the others kept."""
    return ",".join(resolve_item(index, item, job_id) if is_hash_item(item) else item
                    for item in text.split(","))


def resolve_fields(fields: Sequence[str], job_id: str | None) -> list[str]:
    """The six fields of an expression with every ``H`` resolved for ``job_id``.

    Raises :class:`MissingHashIdError` (a :class:`CronSyntaxError`) when an ``H`` is
    present and ``job_id`` is ``None``, and :class:`CronSyntaxError` naming the field, the
    item and its allowed range for a malformed ``H``.
    """
    if job_id is None:
        for index, text in enumerate(fields):
            if any(is_hash_item(item) for item in text.split(",")):
                spec = SPECS[index]
                raise MissingHashIdError(
                    f"{spec.name} field: {text}: H stands for a value chosen from a job "
                    "id, and no id was given (CronExpression(text, hash_id=...))",
                    field=spec.name, text=text)
        return list(fields)
    return [resolve_field(index, text, job_id) for index, text in enumerate(fields)]


def resolve_hash(text: str, job_id: str) -> str:
    """``text`` with each ``H`` replaced by what it stands for for ``job_id``, the other
    items and the number of fields kept as written: ``resolve_hash("H H(1-5) * * *",
    "backup")`` is a five-field ``"M h * * *"``. Text without ``H`` (macros, intervals,
    anything not of 5 or 6 fields) is returned unchanged; ``CronExpression`` reports its
    other mistakes."""
    parts = text.split()
    if len(parts) not in (5, 6) or not any(
            is_hash_item(item) for part in parts for item in part.split(",")):
        return text
    offset = 6 - len(parts)  # five fields: minute is field number 1, as in six
    return " ".join(resolve_field(index + offset, part, job_id)
                    for index, part in enumerate(parts))
