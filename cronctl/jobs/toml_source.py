"""Reading ``jobs.d/*.toml``: the raw tables, plus the line of every table and key.

tomllib gives no positions, so a light scanner over the text finds the line of each
``[jobs.<id>]`` header and each ``key =`` under it (also dotted keys and inline
``jobs.<id> = {...}`` forms). It only has to be right for files tomllib accepted.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cronctl.jobs.calendar_tables import RawCalendar, Where, raw_calendars
from cronctl.jobs.tomlfile import read_toml
from cronctl.jobs.violation import Violation, did_you_mean, display_path
from cronctl.trust import untrusted


@dataclass(frozen=True)
class TomlJob:
    """One ``[jobs.<id>]`` table as written, with where each key came from."""

    id: str
    values: dict[str, Any]
    source: str  # path:line of the table
    key_sources: Mapping[str, str] = field(default_factory=dict)
    days_or: bool = False  # its `cron =` line says `# cronctl: days-or` (DAYS_OR)

    def source_of(self, key: str | None) -> str:
        return self.key_sources.get(key, self.source) if key else self.source


@dataclass(frozen=True)
class JobFiles:
    jobs: tuple[TomlJob, ...]
    violations: tuple[Violation, ...]
    files: int
    warnings: tuple[Violation, ...] = ()
    calendars: tuple[RawCalendar, ...] = ()  # the [calendars.NAME] tables of the files


def read_jobs_dir(jobs_dir: Path, *, required: bool = True, only: str | None = None
                  ) -> JobFiles:
    """Every ``*.toml`` in ``jobs_dir``, sorted by name; problems become violations.
    A missing directory that is not ``required`` (the default ``jobs.d``) is a warning.

    ``only``: a job id; files that cannot define it are not parsed (``cronctl next JOB``
    among 100,000 jobs reads one file, not all of them). Their problems are then not
    reported, so this is for showing one job, never for validating."""
    shown = display_path(jobs_dir)
    distrust = untrusted(jobs_dir, "jobs directory")
    if distrust is not None:
        return JobFiles((), (Violation(shown, None, None, distrust),), 0)
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
    warnings = [*_not_read(jobs_dir)]
    calendars: list[RawCalendar] = []
    for path in paths:
        if only is not None and not _may_define(path, only):
            continue
        distrust = untrusted(path, "job file")
        if distrust is not None:
            violations.append(Violation(display_path(path), None, None, distrust))
            continue
        file_jobs, file_violations, file_calendars = read_job_document(path)
        jobs.extend(file_jobs)
        for v in file_violations:
            (warnings if v.message == NO_JOBS else violations).append(v)
        calendars.extend(file_calendars)
    return JobFiles(tuple(jobs), tuple(violations), len(paths), tuple(warnings),
                    calendars=tuple(calendars))


# On a `cron =` line: both day fields are restricted on purpose (day-of-month OR
# day-of-week), so `validate` does not warn about it. import-crontab writes it where cron
# read the line the same way.
DAYS_OR = "# cronctl: days-or"
NO_JOBS = "defines no jobs (an empty file is valid; add a [jobs.<id>] table or delete it)"
# Names that look like job files but are not read: only `*.toml` is.
_LOOKALIKE = re.compile(r"\.(tml|tom|toml|toml\.\w+|ya?ml|json|ini|conf|cfg)$", re.IGNORECASE)
_SKIPPED_SUFFIX = re.compile(r"(~|\.(bak|orig|swp|swo|rej|dpkg-\w+|rpm\w+|disabled|off))$",
                             re.IGNORECASE)


def _not_read(jobs_dir: Path) -> list[Violation]:
    """A warning for each file in ``jobs_dir`` that looks like a job file but is not read
    (``x.tml``, ``x.yaml``, ``x.TOML``): its jobs would be missing without a word. Backup
    and editor files (``x.toml~``, ``x.toml.bak``, ``x.toml.disabled``) are left alone:
    keeping a file out that way is deliberate."""
    out: list[Violation] = []
    try:
        names = sorted(p.name for p in jobs_dir.iterdir() if p.is_file())
    except (OSError, ValueError):
        return out
    for name in names:
        if name.endswith(".toml") or name.startswith(".") or _SKIPPED_SUFFIX.search(name):
            continue
        if _LOOKALIKE.search(name):
            out.append(Violation(display_path(jobs_dir / name), None, None,
                                 "not read: only *.toml files in the jobs directory are job "
                                 "files (rename it to .toml, or move it out)"))
    return out


def read_job_file(path: Path) -> tuple[list[TomlJob], list[Violation]]:
    """The jobs of one file and its violations (one whose message is :data:`NO_JOBS` is
    only a warning: the file is empty or holds only comments)."""
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
        # Valid TOML with no jobs (a template nobody filled in, a job file emptied to
        # switch its jobs off): worth a word, never a reason to stop the service.
        return [], [Violation(shown, None, None, NO_JOBS)]
    index = _FileLines(text)
    violations: list[Violation] = []
    for key in data:
        if key not in ("jobs", "calendars"):
            hint = (did_you_mean(key, ("jobs", "calendars"))
                    or " (put jobs in [jobs.<id>] tables, calendars in [calendars.<name>])")
            violations.append(Violation(index.top_source(shown, key), None, key,
                                        f"unknown top-level key{hint}"))
    tables = data.get("jobs", {})
    if not isinstance(tables, dict):
        violations.append(Violation(index.source(shown, (), "jobs"), None, "jobs",
                                    "must be a table of jobs: [jobs.<id>]"))
        return [], violations
    jobs: list[TomlJob] = []
    # Only a file with the mark pays for the lines of each job's cron key.
    marked = DAYS_OR in text
    lines = text.splitlines() if marked else []
    for job_id, values in tables.items():
        table_source = index.table_source(shown, ("jobs", job_id))
        if not isinstance(values, dict):
            violations.append(Violation(table_source, job_id, None,
                                        f"must be a table ([jobs.{_key_text(job_id)}] with "
                                        "keys under it), not a value"))
            continue
        key_sources = _KeyLines(index, shown, job_id, values)
        cron_line = index.index.keys.get(("jobs", job_id, "cron")) if marked else None
        days_or = cron_line is not None and DAYS_OR in lines[cron_line - 1]
        jobs.append(TomlJob(id=job_id, values=values, source=table_source,
                            key_sources=key_sources, days_or=days_or))
    return jobs, violations


def _may_define(path: Path, job_id: str) -> bool:
    """Whether the file's bytes could define ``job_id`` or something it may need: they hold
    the id itself, or a ``\\u``/``\\U`` escape that a quoted key could spell it with (ids
    are ASCII letters, digits, '.', '_' and '-', so no other escape can), or calendars
    (a job may use a calendar of another file). Unreadable files are read properly, to
    report why."""
    try:
        raw = path.read_bytes()
    except (OSError, ValueError):
        return True
    return (job_id.encode() in raw or b"\\u" in raw or b"\\U" in raw
            or b"calendars" in raw)


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

    def top_source(self, shown: str, key: str) -> str:
        """Where the top-level ``key`` first appears: as a key, a table or a table's
        prefix (``[job.singular]`` is the only mention of ``job``)."""
        lines = [n for path, n in (*self.keys.items(), *self.tables.items()) if path[0] == key]
        return f"{shown}:{min(lines)}" if lines else shown

    def source(self, shown: str, table: tuple[str, ...], key: str) -> str:
        line = self.keys.get((*table, key))
        if line is None:
            line = self.tables.get((*table, key))  # [jobs.x.parameters] sub-table
        return f"{shown}:{line}" if line is not None else self.table_source(shown, table)


# `[jobs.<id>]` on a line of its own, the way nearly every job table is written.
_SIMPLE_HEADER = re.compile(
    r"^[ \t]*\[[ \t]*jobs[ \t]*\.[ \t]*([A-Za-z0-9_-]+)[ \t]*\][ \t]*(?:#[^\n]*)?$", re.M)


class _FileLines:
    """The lines of one file's tables and keys, worked out when first asked for.

    Every job needs its table's line (its ``source``); only a job with a problem needs its
    keys' lines. So the plain ``[jobs.<id>]`` headers come from one regex pass over the
    text, and the full scan (:class:`_LineIndex`, a Python loop over every line) runs only
    when a key's line, or a table written another way, is asked for. A file with a
    multi-line string, in which a line could look like a header, always gets the full scan.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._index: _LineIndex | None = None
        self._headers: dict[str, int] | None = None

    @property
    def index(self) -> _LineIndex:
        if self._index is None:
            self._index = _LineIndex(self._text)
        return self._index

    def _simple_headers(self) -> dict[str, int]:
        if self._headers is None:
            text = self._text
            self._headers = {}
            if '"""' not in text and "'''" not in text:
                line, pos = 1, 0
                for match in _SIMPLE_HEADER.finditer(text):
                    line += text.count("\n", pos, match.start())
                    pos = match.start()
                    self._headers.setdefault(match.group(1), line)
        return self._headers

    def table_source(self, shown: str, path: tuple[str, ...]) -> str:
        if len(path) == 2 and path[0] == "jobs":
            line = self._simple_headers().get(path[1])
            if line is not None:
                return f"{shown}:{line}"
        return self.index.table_source(shown, path)

    def source(self, shown: str, table: tuple[str, ...], key: str) -> str:
        return self.index.source(shown, table, key)

    def top_source(self, shown: str, key: str) -> str:
        return self.index.top_source(shown, key)


class _KeyLines(Mapping[str, str]):
    """``key -> path:line`` for one job's keys, looked up only when a message needs one."""

    def __init__(self, lines: _FileLines, shown: str, job_id: str,
                 keys: Mapping[str, object]) -> None:
        self._lines, self._shown, self._table, self._keys = lines, shown, ("jobs", job_id), keys

    def __getitem__(self, key: str) -> str:
        if key not in self._keys:
            raise KeyError(key)
        return self._lines.source(self._shown, self._table, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


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
