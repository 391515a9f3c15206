"""What validation reports: one :class:`Violation` per problem, never an exception.

Everything that can be wrong with a job set is collected into a list of these before
anything is registered, so an operator sees every problem in one run.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cronctl.escaping import printable
from cronctl.redaction import redact


@dataclass(frozen=True)
class Violation:
    """One problem. ``source`` is ``path:line`` for TOML (``path`` alone when no line is
    known) or the Python object (``pkg.mod:Class.method``) for decorators and entry points."""

    source: str
    job: str | None
    key: str | None
    message: str

    def __str__(self) -> str:
        parts = [self.source] if self.source else []
        if self.job is not None:
            parts.append(f"job {self.job!r}")
        if self.key is not None:
            parts.append(f"key {self.key!r}")
        parts.append(self.message)
        return printable(redact(": ".join(parts)))  # a value quoted back may hold a URL

    def to_json(self) -> dict[str, str | None]:
        return {"source": self.source, "job": self.job, "key": self.key,
                "message": redact(self.message)}


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def did_you_mean(word: str, choices: Iterable[str],
                 aliases: Mapping[str, str] | None = None) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string. ``aliases``:
    what other tools call a choice (``depends_on`` for ``after``), looked up with the word
    in snake case (``maxAttempts``, ``max-attempts`` are ``max_attempts``)."""
    options = list(choices)
    snake = _CAMEL.sub("_", word).lower().replace("-", "_")
    if snake in options:
        return f" (did you mean {snake!r}?)"
    if aliases and snake in aliases:
        return f" (did you mean {aliases[snake]!r}?)"
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close and len(word) >= 3:
        # A prefix ("single" for "single_instance") is as telling as a typo.
        close = [c for c in options if c.lower().startswith(word.lower())][:1]
    return f" (did you mean {close[0]!r}?)" if close else ""


def display_path(path: Path) -> str:
    """A path as users want to read it: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def one_line(text: str) -> str:
    """Collapse a message to its first non-empty line (tomllib and friends may add more)."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


# Frames that are not the user's code: the frozen import machinery, the importlib package
# and cronctl itself (the frame that imported or called their code).
_NOT_THEIRS = ("<frozen ", os.path.dirname(importlib.__file__) + os.sep,
               os.path.dirname(os.path.dirname(__file__)) + os.sep)


def summarize_exception(exc: BaseException) -> str:
    """``Type: message (file:line)``: the exception and where it was raised, in one line.

    The location is the innermost traceback frame of the user's code (not Python's
    import machinery, ``<frozen importlib._bootstrap>``, nor cronctl's: a module that is
    not found at all has no location), or the offending line of a
    :class:`SyntaxError` (whose innermost frame is importlib's, not the user's).
    """
    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f"{exc.filename}:{exc.lineno}"
        message = one_line(exc.msg)
    else:
        message = one_line(str(exc))
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if not f.filename.startswith(_NOT_THEIRS)]
        if frames:
            where = f"{frames[-1].filename}:{frames[-1].lineno}"
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"{text} ({where})" if where else text
