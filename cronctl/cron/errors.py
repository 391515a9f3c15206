"""Typed errors of the cron engine. Each message is one line a user can act on."""

from __future__ import annotations


class CronSyntaxError(ValueError):
    """A cron expression that cannot be parsed, or whose days can never exist.

    ``field`` names the field at fault ("minute", "day-of-week", ...) or is ``None`` when the
    problem is the expression as a whole (wrong number of fields, unknown macro).
    """

    def __init__(self, message: str, *, field: str | None = None, text: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.text = text


class MissingHashIdError(CronSyntaxError):
    """An expression with ``H`` (docs/behaviour.md#spread-calendars-and-dependencies) and no job id
    to choose its values from."""


class UnknownTimezoneError(ValueError):
    """A time zone name that is not in the IANA database."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown time zone {name!r}")
        self.name = name


class NonexistentTimeError(ValueError):
    """A local time that the clocks skip (inside a DST gap): it names no instant."""
