"""Command-line values every command reads the same way: integer ids and counts, and
``T`` time arguments. Each bad value is one :class:`UsageError` line naming the option
(exit 2), never a traceback: ids are bounded to the database's BIGINT range, counts to
sane maxima, relative times to the 100-year bound of :mod:`cronctl.durations`, and
absolute times to what the engine can search from.

Integers are typer ``parser=`` functions (:func:`bounded_int`); their errors are raised
as :class:`UsageError` so ``cronctl.cli.app.main`` prints them as one line like every
other user error (click's own errors are boxes on a terminal).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from typing import Any

from cronctl.errors import UsageError

BIGINT_MAX = 2**63 - 1  # execution ids are BIGINT in SQLite and PostgreSQL
MAX_ROWS = 1_000_000  # rows or lines one command prints
# Absolute times: the engine searches up to 4 years past T and intervals add up to 100
# years, all of which must stay inside datetime's year 9999.
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
# Schedules are computed from year 2 (a zone's offset near year 1 leaves datetime's range):
# an earlier time would silently read as year 2.
EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
_SHOWN = 30


def _shown(text: str) -> str:
    return repr(text) if len(text) <= _SHOWN else repr(text[:_SHOWN]) + "..."


def parse_int(text: str, *, what: str, minimum: int, maximum: int) -> int:
    """A whole number in ``[minimum, maximum]``, or :class:`UsageError` naming ``what``."""
    value = text.strip()
    # ASCII digits only: int() reads '٣' or '３' as 3, which no one typing a count means
    if not re.fullmatch(r"[+-]?[0-9]+", value) or len(value) > 40:
        if re.fullmatch(r"[+-]?[0-9]+", value):  # a long run of digits: out of range
            raise UsageError(f"{what}: {_shown(value)} is out of range "
                             f"({minimum}-{maximum})")
        raise UsageError(f"{what}: {_shown(text)} is not a whole number")
    number = int(value)
    if not minimum <= number <= maximum:
        raise UsageError(f"{what}: {number} is out of range ({minimum}-{maximum})")
    return number


IntParser = Callable[[Any], int]


def bounded_int(what: str, minimum: int, maximum: int) -> IntParser:
    """A typer ``parser=`` for an integer in ``[minimum, maximum]``. Its errors are
    :class:`UsageError` (not ``ValueError``), so they pass through click's parsing to
    ``cronctl.cli.app.main``, which prints one line."""

    def parse(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value  # a default
        return parse_int(str(value), what=what, minimum=minimum, maximum=maximum)

    parse.__name__ = "int"  # what help shows as the value's type
    return parse


def job_argument(value: str | None, *, what: str = "JOB") -> str | None:
    """A job id as typed. Bytes that are not UTF-8 (Python's lone surrogates) can be no
    job's id (ids are ASCII); said here, before they reach a database query that cannot
    encode them."""
    if value is not None and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{what}: {_shown(value)} is not valid UTF-8 text; job ids are "
                             "letters, digits, '.', '_' and '-'") from None
    return value


def execution_id() -> IntParser:
    """``EXECUTION_ID`` of ``logs`` and ``cancel``: 1 to the BIGINT maximum."""
    return bounded_int("EXECUTION_ID", 1, BIGINT_MAX)


def count(what: str, *, minimum: int = 1, maximum: int = MAX_ROWS) -> IntParser:
    """A count such as ``--limit`` or ``--lines``."""
    return bounded_int(what, minimum, maximum)


# --- T -----------------------------------------------------------------------------------

AGO = "ago"  # a bare duration is that long before now (history, replay)
SIGNED = "signed"  # "2h" / "+2h" after now, "-2h" before (next --from)

_DURATION = r"[0-9]+(\.[0-9]+)?\s*(ms|s|m|h|d|w)(\s*[0-9]+(\.[0-9]+)?\s*(ms|s|m|h|d|w))*"
_RELATIVE = {
    AGO: re.compile(rf"\s*-?\s*{_DURATION}\s*", re.IGNORECASE),  # "-5m" = "5m": ago
    SIGNED: re.compile(rf"\s*[+-]?\s*{_DURATION}\s*", re.IGNORECASE),
}


def is_relative(text: str, relative: str = AGO) -> bool:
    """Whether ``T`` is written as a duration relative to now (``2h``: two hours ago)."""
    return bool(_RELATIVE[relative].fullmatch(text.strip()))


def parse_time(text: str, now: datetime, *, what: str, relative: str = AGO,
               zone: tzinfo = UTC, gap_ok: bool = False, schedule: bool = False
               ) -> datetime:
    """``T``: ``now``, ISO 8601 (without an offset it is in ``zone``; a bare date is its
    midnight there; ``Z`` allowed) or a duration relative to ``now`` (see :data:`AGO`
    and :data:`SIGNED`). Returns an aware UTC datetime.

    A local time inside a DST gap names no instant: :class:`UsageError`, unless
    ``gap_ok`` (``why`` explains such a time), when it is read with the offset before
    the gap, as Python does. ``schedule``: a time schedules are computed from
    (``next --from``): before :data:`EARLIEST` is a :class:`UsageError`."""
    from cronctl.cron.errors import NonexistentTimeError
    from cronctl.cron.zones import utc_instant
    from cronctl.durations import DurationError, parse_duration

    value = text.strip()
    if value.lower() == "now":
        return now
    if _RELATIVE[relative].fullmatch(value):
        sign = -1 if relative == AGO or value.startswith("-") else 1
        try:
            delta = parse_duration(value.lstrip("+-").strip())
        except DurationError as exc:
            raise UsageError(f"{what}: {exc}") from None
        return _bounded(now + sign * delta, text, what)  # within 100 years: no overflow
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        example = "2h, 3d" if relative == AGO else "2h, 3d, -1d"
        raise UsageError(f"{what}: {_shown(text)} is neither an ISO 8601 time "
                         f"(2026-03-08T07:00:00Z) nor a relative one ({example})") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    try:
        # A local time inside a DST gap names no instant (next --from in --tz's zone);
        # 0001-01-01T00:00+01:00 is before year 1 in UTC.
        at = utc_instant(parsed)
    except NonexistentTimeError as exc:
        if not gap_ok:
            raise UsageError(f"{what}: {exc}") from None
        at = parsed.astimezone(UTC)
    except ValueError as exc:
        raise UsageError(f"{what}: {exc}") from None
    if schedule and at < EARLIEST:
        raise UsageError(f"{what}: {_shown(text)} is too far in the past (the earliest "
                         f"time accepted is {EARLIEST.date().isoformat()})")
    return _bounded(at, text, what)


def _bounded(at: datetime, text: str, what: str) -> datetime:
    if at >= LATEST:
        raise UsageError(f"{what}: {_shown(text)} is too far in the future (the latest "
                         f"time accepted is before {LATEST.date().isoformat()})")
    return at

