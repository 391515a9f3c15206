"""Reading ``jobs.d/*.toml``: the raw tables, plus the line of every table and key.

tomllib gives no positions, so a light scanner over the text finds the line of each
``[jobs.<id>]`` header and each ``key =`` under it (also dotted keys and inline
``jobs.<id> = {...}`` forms). It only has to be right for files tomllib accepted.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cronctl.jobs.calendar_tables import RawCalendar, Where, raw_calendars
from cronctl.jobs.tomlfile import read_toml
from cronctl.jobs.violation import Violation, display_path


@dataclass(frozen=True)
class TomlJob:
    """One ``[jobs.<id>]`` table as written, with where each key came from."""

    id: str
    values: dict[str, Any]
    source: str  # path:line of the table
    key_sources: dict[str, str] = field(default_factory=dict)

    def source_of(self, key: str | None) -> str:
        return self.key_sources.get(key, self.source) if key else self.source


@dataclass(frozen=True)
class JobFiles:
    jobs: tuple[TomlJob, ...]
    violations: tuple[Violation, ...]
    files: int
    warnings: tuple[Violation, ...] = ()
    calendars: tuple[RawCalendar, ...] = ()  # the [calendars.NAME] tables of the files


def read_jobs_dir(jobs_dir: Path, *, required: bool = True) -> JobFiles:
    """Every ``*.toml`` in ``jobs_dir``, sorted by name; problems become violations.
    A missing directory that is not ``required`` (the default ``jobs.d``) is a warning."""
    shown = display_path(jobs_dir)
    try:
        paths = sorted(p for p in jobs_dir.iterdir() if p.name.endswith(".toml"))
    except FileNotFoundError:
        if not required:
            return JobFiles((), (), 0, (Violation(shown, None, None,
                                                  "jobs directory does not exist; no TOML "
                                                  "jobs loaded"),))
        return JobFiles((), (Violation(shown, None, None,
                                       "jobs directory does not exist (set jobs_dir in "
                                       "cronctl.toml or --jobs-dir)"),), 0)
    except NotADirectoryError:
        return JobFiles((), (Violation(shown, None, None, "jobs_dir is not a directory"),), 0)
    except OSError as exc:
        return JobFiles((), (Violation(shown, None, None,
                                       f"cannot read jobs directory: {exc.strerror or exc}"),), 0)
    except ValueError as exc:  # `--jobs-dir $'a\x00b'`: found by fuzzing
        return JobFiles((), (Violation(shown, None, None,
                                       f"cannot read jobs directory: {exc}"),), 0)
    jobs: list[TomlJob] = []
    violations: list[Violation] = []
    calendars: list[RawCalendar] = []
    for path in paths:
        file_jobs, file_violations, file_calendars = read_job_document(path)
        jobs.extend(file_jobs)
        violations.extend(file_violations)
        calendars.extend(file_calendars)
    return JobFiles(tuple(jobs), tuple(violations), len(paths), calendars=tuple(calendars))


def read_job_file(path: Path) -> tuple[list[TomlJob], list[Violation]]:
    """The file's jobs and its violations."""
    jobs, violations, _ = read_job_document(path)
    return jobs, violations


def read_job_document(path: Path
                      ) -> tuple[list[TomlJob], list[Violation], list[RawCalendar]]:
    """The file's jobs, its violations and its ``[calendars.NAME]`` tables."""
    shown = display_path(path)
    read = read_toml(path, "job file")
    if isinstance(read, Violation):
        return [], [read], []
    text, data = read.text, read.data
    jobs, violations = _read_jobs(shown, text, data)
    calendars: list[RawCalendar] = []
    if "calendars" in data:
        calendars, problems = raw_calendars(data["calendars"], path.parent,
                                            line_index(text, shown))
        violations.extend(problems)
    return jobs, violations, calendars


def line_index(text: str, shown: str) -> Where:
    """``where(table, key)``: the ``path:line`` of a key of a table of ``text`` (``key``
    None: of the table itself)."""
    index = _LineIndex(text)

    def where(table: tuple[str, ...], key: str | None) -> str:
        return index.table_source(shown, table) if key is None else index.source(
            shown, table, key)
    return where


def read_config_calendars(path: Path, data: dict[str, Any]
                          ) -> tuple[list[RawCalendar], list[Violation]]:
    """The ``[calendars.NAME]`` tables of the configuration file at ``path``."""
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError, ValueError):
        text = ""
    return raw_calendars(data["calendars"], path.parent, line_index(text, shown))


def _read_jobs(shown: str, text: str, data: dict[str, Any]
               ) -> tuple[list[TomlJob], list[Violation]]:

    if not data:
        # An empty (or comments-only) file is almost always a mistake: a job file that
        # lost its contents, or a template nobody filled in.
        return [], [Violation(shown, None, None,
                              "defines no jobs; add a [jobs.<id>] table or delete the file")]
    index = _LineIndex(text)
    violations: list[Violation] = []
    for key in data:
        if key not in ("jobs", "calendars"):
            hint = " (put jobs in [jobs.<id>] tables, calendars in [calendars.<name>])"
            violations.append(Violation(index.source(shown, (), key), None, key,
                                        f"unknown top-level key{hint}"))
    tables = data.get("jobs", {})
    if not isinstance(tables, dict):
        violations.append(Violation(index.source(shown, (), "jobs"), None, "jobs",
                                    "must be a table of jobs: [jobs.<id>]"))
        return [], violations
    jobs: list[TomlJob] = []
    for job_id, values in tables.items():
        table_source = index.table_source(shown, ("jobs", job_id))
        if not isinstance(values, dict):
            violations.append(Violation(table_source, job_id, None,
                                        f"must be a table ([jobs.{_key_text(job_id)}] with "
                                        "keys under it), not a value"))
            continue
        key_sources = {
            key: index.source(shown, ("jobs", job_id), key) for key in values
        }
        jobs.append(TomlJob(id=job_id, values=values, source=table_source,
                            key_sources=key_sources))
    return jobs, violations


def _key_text(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'"{key}"'


# --- positions -----------------------------------------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"\s*\[\[?(?P<key>[^\[\]]*)\]\]?\s*(?:#.*)?$")


# The common lines, read without the general key parser: `name = ...` and `[a.b]`.
_PLAIN_KEY = re.compile(r"[ \t]*([A-Za-z0-9_-]+)[ \t]*(?==)")
_PLAIN_DOTTED = re.compile(r"[ \t]*[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*[ \t]*")


def _split_key(text: str) -> tuple[tuple[str, ...], int] | None:
    """Parse a (dotted) TOML key at the start of ``text``: its parts and where it ends."""
    plain = _PLAIN_KEY.match(text)
    if plain is not None:
        return (plain.group(1),), plain.end()
    if _PLAIN_DOTTED.fullmatch(text):  # a header's whole key
        return tuple(text.strip().split(".")), len(text)
    parts: list[str] = []
    pos = 0
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos >= n:
            return None
        char = text[pos]
        if char == '"':
            end = pos + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if end >= n:
                return None
            literal = text[pos : end + 1]
            if "\\" in literal:
                try:
                    parts.append(next(iter(tomllib.loads(f"{literal} = 0"))))
                except tomllib.TOMLDecodeError:
                    return None
            else:
                parts.append(literal[1:-1])
            pos = end + 1
        elif char == "'":
            end = text.find("'", pos + 1)
            if end < 0:
                return None
            parts.append(text[pos + 1 : end])
            pos = end + 1
        else:
            match = _BARE.match(text, pos)
            if not match:
                return None
            parts.append(match.group())
            pos = match.end()
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos < n and text[pos] == ".":
            pos += 1
            continue
        return tuple(parts), pos


class _LineIndex:
    """Line numbers of table headers and of keys, keyed by their full path."""

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[str, ...], int] = {}
        self.keys: dict[tuple[str, ...], int] = {}
        current: tuple[str, ...] = ()
        in_multiline: str | None = None
        depth = 0  # open brackets of a multi-line array or inline table
        for number, line in enumerate(text.splitlines(), start=1):
            if in_multiline is not None:
                if line.count(in_multiline) % 2 == 1:
                    in_multiline = None
                continue
            if depth > 0:
                depth = max(0, depth + _bracket_balance(line))
                continue
            header = _HEADER.match(line)
            if header and line.lstrip().startswith("["):
                parsed = _split_key(header.group("key"))
                if parsed is not None:
                    current = parsed[0]
                    self.tables.setdefault(current, number)
                continue
            parsed = _split_key(line)
            if parsed is None:
                continue
            parts, end = parsed
            if end >= len(line) or line[end] != "=":
                continue
            for i in range(len(parts)):
                path = current + parts[: i + 1]
                self.keys.setdefault(path, number)
                self.tables.setdefault(path, number)
            rest = line[end + 1 :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_multiline = quote
                    break
            else:
                if "[" in rest or "{" in rest:  # (most values open nothing: skip the scan)
                    depth = max(0, _bracket_balance(rest))

    def table_source(self, shown: str, path: tuple[str, ...]) -> str:
        for cut in range(len(path), 0, -1):
            line = self.tables.get(path[:cut])
            if line is not None:
                return f"{shown}:{line}"
        return shown

    def source(self, shown: str, table: tuple[str, ...], key: str) -> str:
        line = self.keys.get((*table, key))
        if line is None:
            line = self.tables.get((*table, key))  # [jobs.x.parameters] sub-table
        return f"{shown}:{line}" if line is not None else self.table_source(shown, table)


def _bracket_balance(text: str) -> int:
    """Net open ``[``/``{`` outside strings and comments (rough, good enough for lines)."""
    balance = 0
    quote: str | None = None
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 1
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char in "[{":
            balance += 1
        elif char in "]}":
            balance -= 1
        i += 1
    return balance
