"""``cronctl.toml``: where it is, what ``[scheduler]`` may say, and the defaults.

Lookup order: ``--config``, ``$CRONCTL_CONFIG``, ``./cronctl.toml``,
``/etc/cronctl/cronctl.toml``; no file at all is valid and means defaults. Relative paths
in the file are relative to the file. The database is chosen by ``--database``, else
``$CRONCTL_DATABASE_URL``, else the file, else SQLite at ``$STATE_DIRECTORY/cronctl.db``
(systemd) or ``./cronctl.db``.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cronctl.apiconfig import API_KEYS, ApiSettings, read_api
from cronctl.cgroups import setting as cgroup_setting
from cronctl.credentials import DATABASE_CREDENTIAL, credential_database
from cronctl.durations import DurationError, parse_duration
from cronctl.errors import ConfigError, UsageError
from cronctl.jobs.calendar_tables import RawCalendar
from cronctl.jobs.model import DEFAULT_OUTPUT_LIMIT, Isolation, parse_choice
from cronctl.jobs.notify import NotifySpec, read_notify
from cronctl.jobs.sandbox import to_output_limit
from cronctl.jobs.settings import JobSettings
from cronctl.jobs.toml_source import read_config_calendars
from cronctl.jobs.tomlfile import read_toml
from cronctl.jobs.violation import Violation, did_you_mean, display_path, one_line
from cronctl.listen import LOOPBACK as LOOPBACK  # re-exported: callers import them here
from cronctl.listen import format_listen as format_listen
from cronctl.listen import parse_listen as parse_listen
from cronctl.store.urls import check_url, kind_of, redact
from cronctl.trust import untrusted

if TYPE_CHECKING:
    from cronctl.options import GlobalOptions

SYSTEM_CONFIG = Path("/etc/cronctl/cronctl.toml")
MEMORY = "none"
MAX_CONCURRENT_JOBS = 10_000  # counts are bounded (docs/behaviour.md#configuration)


@dataclass(frozen=True)
class RetentionSettings:
    """``[retention]``: what ``cronctl run`` and ``cronctl prune`` keep (docs/behaviour.md).

    ``interval`` zero means ``run`` never prunes by itself (``cronctl prune`` still does).
    ``max_log_lines`` caps the job log lines each execution keeps."""

    executions: timedelta = timedelta(days=30)
    keep_last: int = 20
    skipped: timedelta = timedelta(days=7)
    interval: timedelta = timedelta(hours=1)
    max_log_lines: int = 10_000


@dataclass(frozen=True)
class Config:
    """The resolved configuration. ``database`` is a SQLAlchemy URL or ``"none"``."""

    path: Path | None
    base_dir: Path  # the config file's directory, or the working directory without one
    database: str
    jobs_dir: Path
    node_id: str
    tracked: bool = True
    max_concurrent_jobs: int = 10
    progress_flush_interval: timedelta = timedelta(seconds=10)
    shutdown_timeout: timedelta = timedelta(seconds=30)
    heartbeat_interval: timedelta = timedelta(seconds=5)
    clock_skew_limit: timedelta = timedelta(minutes=5)
    auto_migrate: bool = True
    output_limit: int = DEFAULT_OUTPUT_LIMIT  # bytes of output each execution keeps
    isolation: str = "process"  # where python:/service: jobs run unless they say
    # Extra directories python: targets and service packages (entry points) load from.
    python_path: tuple[Path, ...] = ()
    retention: RetentionSettings = RetentionSettings()
    # False when jobs_dir is the default: a missing default ``jobs.d`` is only a warning
    # (no file at all is a valid configuration), a missing configured one a violation.
    jobs_dir_required: bool = True
    # [metrics] listen: (host, port) that ``cronctl run`` serves /metrics and /healthz on.
    metrics_listen: tuple[str, int] | None = None
    # [notify]: the notifications of every job (a job's notify table overrides it by key).
    notify: NotifySpec = NotifySpec()
    # [calendars.NAME] tables (docs/behaviour.md#calendars), built and checked with the jobs.
    calendars: tuple[RawCalendar, ...] = ()
    # [api]: what `cronctl serve` listens on, its tokens, its read deadline.
    api: ApiSettings = ApiSettings()
    cgroup: str = "auto"  # "auto", "off" or a cgroup v2 directory (cronctl/cgroups.py)

    @property
    def in_memory(self) -> bool:
        """``database = "none"``: state in memory, every-instance jobs only."""
        return self.database == MEMORY

    @property
    def database_display(self) -> str:
        return redact_url(self.database)

    @property
    def state_dir(self) -> Path:
        """Where cronctl keeps files of its own beside the database: ``$STATE_DIRECTORY``
        (systemd), else the SQLite database's directory, else ``~/.cache/cronctl``."""
        first = _state_directory()
        if first:
            return Path(first)
        if kind_of(self.database) == "sqlite":
            from cronctl.store.urls import sqlite_path

            path = sqlite_path(self.database)
            if path:
                return Path(path).absolute().parent
        return Path.home() / ".cache" / "cronctl"

    @property
    def job_settings(self) -> JobSettings:
        """What :func:`cronctl.jobs.load_jobs` needs of this configuration."""
        return JobSettings(
            jobs_dir=self.jobs_dir,
            base_dir=self.base_dir,
            jobs_dir_required=self.jobs_dir_required,
            memory_database=self.in_memory,
            tracked_default=self.tracked,
            output_limit_default=self.output_limit,
            isolation_default=self.isolation,
            python_path=self.python_path,
            calendar_tables=self.calendars,
        )


@dataclass(frozen=True)
class ConfigResult:
    """A config (defaults where the file was wrong) and what was wrong with the file."""

    config: Config
    violations: tuple[Violation, ...]


_BOOL_KEYS = ("tracked", "auto_migrate")
_DURATION_KEYS = ("progress_flush_interval", "shutdown_timeout", "heartbeat_interval",
                  "clock_skew_limit")
SCHEDULER_KEYS = (
    "database",
    "jobs_dir",
    "node_id",
    "tracked",
    "max_concurrent_jobs",
    *_DURATION_KEYS,
    "auto_migrate",
    "python_path",
    "output_limit",
    "isolation", "cgroup",
)
SECTIONS = ("scheduler", "metrics", "notify", "retention", "calendars", "api")
RETENTION_KEYS = ("executions", "keep_last", "skipped", "interval", "max_log_lines")
MAX_KEEP_LAST = 1_000_000
MAX_LOG_LINES = 10_000_000
METRICS_KEYS = ("listen",)


def find_config_file(explicit: Path | None) -> Path | None:
    """The config file to read, or ``None`` for defaults. A file named explicitly
    (``--config`` or ``$CRONCTL_CONFIG``) must exist."""
    if explicit is not None:
        named, origin = explicit, "--config"
    elif os.environ.get("CRONCTL_CONFIG"):
        named, origin = Path(os.environ["CRONCTL_CONFIG"]), "$CRONCTL_CONFIG"
    else:
        for candidate in (Path("cronctl.toml"), SYSTEM_CONFIG):
            if candidate.is_file():
                return candidate.absolute()
        return None
    try:
        is_dir, is_file = named.is_dir(), named.is_file()
    except OSError as exc:  # ENAMETOOLONG, EACCES...: found by fuzzing -c
        raise ConfigError(f"config file {_shown_path(named)} (from {origin}) cannot be "
                          f"read: {exc.strerror or exc}") from None
    if is_dir:
        raise ConfigError(f"config file {str(named)!r} (from {origin}) is a directory; name "
                          f"the file, e.g. {str(named / 'cronctl.toml')!r}")
    if not is_file:
        raise ConfigError(f"config file {_shown_path(named)} (from {origin}) does not exist")
    return named.absolute()


def _shown_path(path: Path) -> str:
    """A path for a message: quoted, and cut short when it is very long."""
    text = str(path)
    return repr(text) if len(text) <= 200 else repr(text[:200]) + "..."


def read_config(options: GlobalOptions) -> ConfigResult:
    """Resolve the configuration, collecting every problem of the file as a violation.

    Raises :class:`ConfigError` only when an explicitly named file does not exist or
    ``$CRONCTL_DATABASE_URL`` can be no database, :class:`UsageError` for such a
    ``--database``."""
    path = find_config_file(options.config)
    base_dir = path.parent if path is not None else Path.cwd()
    values: dict[str, Any] = {}
    violations: list[Violation] = []
    sections: dict[str, Any] = {}
    if path is not None:
        distrust = untrusted(path, "config file")
        if distrust is not None:
            violations.append(Violation(display_path(path), None, None, distrust))
        else:
            values, violations, sections = _read_file(path)
    config = Config(
        path=path,
        base_dir=base_dir,
        database=_default_database(),
        jobs_dir=base_dir / "jobs.d",
        node_id=socket.gethostname(),
        jobs_dir_required="jobs_dir" in values,
    )
    changes: dict[str, Any] = {}
    lines = _key_lines(path) if path is not None and values else {}
    for key, value in values.items():
        source = f"{display_path(path)}:{lines[key]}" if path and key in lines else (
            display_path(path) if path else "")
        try:
            changes[key] = _convert(key, value, base_dir)
        except ValueError as exc:
            violations.append(Violation(source, None, f"scheduler.{key}", one_line(str(exc))))
    if path is not None:
        changes.update(_read_sections(path, sections, violations))
    config = replace(config, **changes)
    credential = credential_database()
    if credential:
        try:
            config = replace(config, database=normalize_database(credential, Path.cwd()))
        except ValueError as exc:
            raise ConfigError(f"credential {DATABASE_CREDENTIAL}: {exc}") from None
    env_db = os.environ.get("CRONCTL_DATABASE_URL")
    if env_db:
        try:
            config = replace(config, database=normalize_database(env_db, Path.cwd()))
        except ValueError as exc:
            raise ConfigError(f"$CRONCTL_DATABASE_URL: {exc}") from None
    if options.database:
        try:
            config = replace(config, database=normalize_database(options.database, Path.cwd()))
        except ValueError as exc:
            raise UsageError(f"--database: {exc}") from None
    if options.jobs_dir is not None:
        config = replace(config, jobs_dir=options.jobs_dir.absolute(), jobs_dir_required=True)
    return ConfigResult(config=config, violations=tuple(violations))


def load_config(options: GlobalOptions) -> Config:
    """The configuration, or :class:`ConfigError` naming every problem of the file."""
    result = read_config(options)
    if result.violations:
        shown = "; ".join(str(v) for v in result.violations)
        raise ConfigError(f"invalid configuration: {shown}")
    return result.config


def normalize_database(value: str, base: Path) -> str:
    """A URL as given, ``"none"``, or a plain SQLite path made into ``sqlite:///abs``.
    Relative ``sqlite:///rel`` URLs are made absolute against ``base`` too. ``ValueError``
    for a value that can be no database (a NUL, an unknown ``~user``, a scheme that is
    neither SQLite nor PostgreSQL)."""
    text = value.strip()
    if text.lower() == MEMORY:
        return MEMORY
    if "\x00" in text:
        raise ValueError(f"{text!r} contains a NUL character")
    if "://" not in text:
        check_url(f"sqlite:///{text}")  # (a name too long: before resolve() trips on it)
        return f"sqlite:///{user_path(text, base).resolve()}"
    # An unsupported scheme is the file's (or option's) problem, said when it is read:
    # found by fuzzing, `list --database mysql://` raised it from deep in the store.
    check_url(text)
    if text.startswith("sqlite:///") and not text.startswith("sqlite:////"):
        rest = text[len("sqlite:///"):]
        if rest and not rest.startswith(":memory:") and not rest.startswith("file:"):
            path, sep, query = rest.partition("?")
            return f"sqlite:///{(base / path).resolve()}{sep}{query}"
    return text


redact_url = redact  # (the callers' name for cronctl.redaction.redact)


def _state_directory() -> str:
    # systemd may pass several directories separated by ':'; the first is ours.
    return os.environ.get("STATE_DIRECTORY", "").split(":")[0]


def _default_database() -> str:
    first = _state_directory()
    base = Path(first) if first else Path.cwd()
    return f"sqlite:///{(base / 'cronctl.db').absolute()}"


def _read_file(path: Path) -> tuple[dict[str, Any], list[Violation], dict[str, Any]]:
    """The ``[scheduler]`` keys, the violations, and the other known sections (raw)."""
    shown = display_path(path)
    read = read_toml(path)
    if isinstance(read, Violation):
        return {}, [read], {}
    data = read.data
    violations: list[Violation] = []
    for key in data:
        if key not in SECTIONS:
            violations.append(Violation(shown, None, key,
                                        f"unknown section{did_you_mean(key, SECTIONS)}"))
    sections = {key: data[key] for key in SECTIONS[1:] if key in data}
    scheduler = data.get("scheduler", {})
    if not isinstance(scheduler, dict):
        violations.append(Violation(shown, None, "scheduler", "must be a table ([scheduler])"))
        return {}, violations, sections
    values: dict[str, Any] = {}
    lines = _key_lines(path)
    for key, value in scheduler.items():
        if key not in SCHEDULER_KEYS:
            where = f"{shown}:{lines[key]}" if key in lines else shown
            hint = (" (it belongs in [retention])" if key in RETENTION_KEYS
                    else did_you_mean(key, SCHEDULER_KEYS))
            violations.append(Violation(where, None, f"scheduler.{key}", f"unknown key{hint}"))
        else:
            values[key] = value
    return values, violations, sections


def _read_sections(path: Path, sections: dict[str, Any], violations: list[Violation]
                   ) -> dict[str, Any]:
    """The Config changes of ``[metrics]`` and ``[notify]`` (section 7); problems go to
    ``violations``."""
    changes: dict[str, Any] = {}
    shown = display_path(path)
    if "calendars" in sections:
        calendars, calendar_problems = read_config_calendars(path, sections)
        violations.extend(calendar_problems)
        changes["calendars"] = tuple(calendars)
    if "retention" in sections:
        changes["retention"] = _retention(path, sections["retention"], violations)
    if "notify" in sections:
        lines = _key_lines(path, "notify")
        notify, problems = read_notify(sections["notify"])
        for sub, message in problems:
            where = f"{shown}:{lines[sub]}" if sub in lines else shown
            violations.append(Violation(where, None, f"notify.{sub}" if sub else "notify",
                                        one_line(message)))
        changes["notify"] = notify
    if "api" in sections:
        changes["api"] = _api(path, sections["api"], violations)
    metrics = sections.get("metrics")
    if metrics is None:
        return changes
    if not isinstance(metrics, dict):
        violations.append(Violation(shown, None, "metrics", "must be a table ([metrics])"))
        return changes
    lines = _key_lines(path, "metrics")
    for key, value in metrics.items():
        where = f"{shown}:{lines[key]}" if key in lines else shown
        if key not in METRICS_KEYS:
            violations.append(Violation(where, None, f"metrics.{key}",
                                        f"unknown key{did_you_mean(key, METRICS_KEYS)}"))
            continue
        try:
            changes["metrics_listen"] = parse_listen(value)
        except ValueError as exc:
            violations.append(Violation(where, None, f"metrics.{key}", one_line(str(exc))))
    return changes


def _api(path: Path, table: Any, violations: list[Violation]) -> ApiSettings:
    shown = display_path(path)
    if not isinstance(table, dict):
        violations.append(Violation(shown, None, "api", "must be a table ([api])"))
        return ApiSettings()
    lines = _key_lines(path, "api")
    changes, problems = read_api(table, path.parent, parse_listen, user_path)
    for key, message in problems:
        hint = did_you_mean(key, API_KEYS) if message == "unknown key" else ""
        violations.append(Violation(f"{shown}:{lines[key]}" if key in lines else shown, None,
                                    f"api.{key}", one_line(message + hint)))
    return replace(ApiSettings(), **changes)


def _retention(path: Path, table: Any, violations: list[Violation]) -> RetentionSettings:
    """``[retention]`` as settings (defaults where a value is wrong); its problems go to
    ``violations``."""
    shown = display_path(path)
    if not isinstance(table, dict):
        violations.append(Violation(shown, None, "retention", "must be a table ([retention])"))
        return RetentionSettings()
    lines = _key_lines(path, "retention")
    changes: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{shown}:{lines[key]}" if key in lines else shown
        if key not in RETENTION_KEYS:
            hint = (" (it belongs in [scheduler])" if key in SCHEDULER_KEYS
                    else did_you_mean(key, RETENTION_KEYS))
            violations.append(Violation(where, None, f"retention.{key}", f"unknown key{hint}"))
            continue
        try:
            if key in ("keep_last", "max_log_lines"):
                low, high = (0, MAX_KEEP_LAST) if key == "keep_last" else (1, MAX_LOG_LINES)
                changes[key] = _count(value, low, high)
            else:
                changes[key] = parse_duration(value, allow_zero=key == "interval")
        except (ValueError, DurationError) as exc:
            violations.append(Violation(where, None, f"retention.{key}", one_line(str(exc))))
    return replace(RetentionSettings(), **changes)


def _count(value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"must be a whole number from {low:,} to {high:,}, not {value!r}")
    return value


def _key_lines(path: Path, table: str = "scheduler") -> dict[str, int]:
    """Line numbers of ``key =`` lines under ``[table]`` (tomllib gives none)."""
    lines: dict[str, int] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return lines
    text = text.removeprefix("\ufeff")  # read_toml accepts a UTF-8 BOM
    section = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[] \t").split("#")[0].strip().strip("]").strip()
            if section.startswith(f"{table}."):  # [notify.headers]: the line of "headers"
                lines.setdefault(section[len(table) + 1:].split(".")[0].strip(), number)
            continue
        match = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line)
        if match and section == table:
            lines.setdefault(match.group(1), number)
    return lines


def _convert(key: str, value: Any, base_dir: Path) -> Any:
    if key == "database":
        return normalize_database(_string(value), base_dir)
    if key == "jobs_dir":
        return user_path(_string(value), base_dir)
    if key == "node_id":
        if "\x00" in (node := _string(value)) or len(node) > 255:
            raise ValueError("must be at most 255 characters without a NUL character")
        return node
    if key in _BOOL_KEYS:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, not {value!r}")
        return value
    if key == "max_concurrent_jobs":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"must be a whole number >= 1, not {value!r}")
        if value > MAX_CONCURRENT_JOBS:
            raise ValueError(f"must be at most {MAX_CONCURRENT_JOBS}")
        return value
    if key == "output_limit":
        return to_output_limit(value)
    if key == "isolation":
        return parse_choice(Isolation, value).value  # (ValueError names the choices)
    if key == "cgroup":
        return cgroup_setting(_string(value))
    if key == "python_path":
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip()
                                                  for v in value):
            raise ValueError("must be a list of directories, e.g. [\"lib\"]")
        return tuple(user_path(v, base_dir) for v in value)
    if key in _DURATION_KEYS:
        try:
            return parse_duration(value, allow_zero=key in ("clock_skew_limit", "shutdown_timeout"))
        except DurationError as exc:
            raise ValueError(str(exc)) from None
    raise AssertionError(key)  # pragma: no cover - SCHEDULER_KEYS and this list agree


def user_path(text: str, base_dir: Path) -> Path:
    """A path as written in the file or on the command line: ``~`` and ``~user``
    expanded, relative to ``base_dir``. ``ValueError`` (one line) for what no file system
    accepts, found by fuzzing: a NUL character (``"a\\u0000b"``), and a ``~user`` whose
    home cannot be found (pathlib raised RuntimeError)."""
    if "\x00" in text:
        raise ValueError(f"{text!r} contains a NUL character")
    try:
        expanded = Path(text).expanduser()
    except RuntimeError:
        head = text.split("/", 1)[0]
        raise ValueError(f"{text!r}: cannot expand {head!r} (no such user, or no home "
                         "directory)") from None
    return (base_dir / expanded).absolute()


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, not {repr(value)[:60]}")
    return value.strip()
