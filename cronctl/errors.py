"""Errors a user can cause. Each carries the exit code the CLI maps it to.

They are caught once, at the CLI edge (``cronctl.cli.app.main``), and printed as a
single ``error: ...`` line. Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class CronctlError(Exception):
    """Base of every error a user can cause; ``exit_code`` is what the CLI exits with."""

    exit_code: int = 1


class UsageError(CronctlError):
    """Bad command-line input (a bad expression, zone, time or option value)."""

    exit_code = 2


class NotFoundError(CronctlError):
    """A job, execution or other named thing does not exist."""

    exit_code = 3


class ConfigError(CronctlError):
    """The configuration file is unreadable or invalid."""

    exit_code = 1


class StoreError(CronctlError):
    """The state database cannot be used (unreachable, read-only, newer schema, ...)."""

    exit_code = 1


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its type's name when the message is empty:
    how a failure is told in one log line or one stored ``error`` (a driver's message may
    run over several lines, and ``str(TimeoutError())`` is empty)."""
    text = str(exc).strip()
    return text.splitlines()[0].rstrip() if text else type(exc).__name__
