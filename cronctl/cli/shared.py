"""What several commands share, so that no ``cmd_*`` module imports another.

Reading the configuration and the jobs (:func:`check_all`), opening the state database
(:func:`open_state` and :func:`open_reader` for the read-only commands, which never
create it, :func:`open_for_writing` for the ones that may), naming a job (``JOB`` or
``--job``), looking up an execution, and the shapes an execution is shown in.

Imported by every command at start-up: only the standard library and cronctl's leaf
modules at the top; the config, the jobs and the store load inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cronctl.errors import NotFoundError, StoreError, UsageError
from cronctl.views.common import execution_json as execution_json  # re-exported for cmd_*
from cronctl.views.common import fenced_note as fenced_note
from cronctl.views.common import iso_z as iso_z
from cronctl.views.common import require_job_defined as require_job_defined
from cronctl.views.common import rows_json as rows_json

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.jobs.loader import LoadResult
    from cronctl.jobs.violation import Violation
    from cronctl.options import GlobalOptions
    from cronctl.store.base import ExecutionRecord, Reader, Requester, Store


# --- the configuration and the jobs ----------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """The configuration and the jobs as loaded, with every problem of both."""

    config: Config
    result: LoadResult
    violations: tuple[Violation, ...]
    warnings: tuple[Violation, ...]


def check_all(options: GlobalOptions, now: datetime | None = None, *,
              cached: bool = False) -> Checked:
    """Read ``cronctl.toml`` and load every job; the file's problems come first.
    ``cached``: the set may come from :mod:`cronctl.jobs.setcache` (commands that only
    show it, such as ``list``; never ``validate`` or ``run``)."""
    from cronctl.config import read_config
    from cronctl.jobs.loader import load_jobs

    read = read_config(options)
    settings = read.config.job_settings
    if cached and not read.violations:
        from cronctl.jobs.setcache import cached_load

        state_dir = read.config.state_dir
        result = cached_load(settings, read.config.path, state_dir,
                             lambda: load_jobs(settings, now=now, state_dir=state_dir))
    else:
        result = load_jobs(settings, now=now)
    return Checked(
        config=read.config,
        result=result,
        violations=(*read.violations, *result.violations),
        warnings=result.warnings,
    )


# --- the state database ----------------------------------------------------------------


def open_state(options: GlobalOptions, *, missing_ok: bool = False
               ) -> tuple[Config, Store | None]:
    """The config and its store. A SQLite file that does not exist is not created (an
    operator command must not create it): :class:`NotFoundError` naming it (exit 3), or
    ``None`` with ``missing_ok`` (``prune``, ``replay --dry-run``: what they would do to
    an empty database is the answer). Raises :class:`StoreError` for ``database =
    "none"``: there is no shared state to look at."""
    from cronctl.config import load_config

    config = load_config(options)
    if _no_state(config, missing_ok):
        return config, None
    return config, _open_store(config)


def open_reader(options: GlobalOptions) -> tuple[Config, Requester]:
    """Like :func:`open_state`, for the commands that only read (``history``, ``logs``,
    ``why``): a database at the schema head is used without SQLAlchemy
    (:mod:`cronctl.store.reader`), anything else through the full store."""
    from cronctl.config import load_config

    config = load_config(options)
    reader = reader_for(config)
    assert reader is not None  # a missing file is NotFoundError without missing_ok
    return config, reader


def reader_for(config: Config, *, missing_ok: bool = False) -> Requester | None:
    """:func:`open_reader` for a configuration already loaded (``status``; ``trigger``
    with ``missing_ok``, where no database means no scheduler)."""
    if _no_state(config, missing_ok):
        return None
    from cronctl.store.reader import open_reader as open_db_reader

    reader = open_db_reader(config.database)
    return reader if reader is not None else _open_store(config)


def _no_state(config: Config, missing_ok: bool) -> bool:
    """True when the SQLite file does not exist and ``missing_ok``; without it
    :class:`NotFoundError`: a mistyped path read as an empty database ("no executions",
    "no live nodes", exit 0). :class:`StoreError` for ``database = "none"``."""
    if config.database.strip().lower() == "none":
        raise StoreError(
            "the database is 'none': executions are kept in the scheduler's memory only; "
            "set [scheduler] database (or --database) to a SQLite or PostgreSQL URL"
        )
    missing = _sqlite_file_missing(config.database)
    if missing is None or missing_ok:
        return missing is not None
    from cronctl.config import redact_url

    where = missing.parent
    why = ("nothing has run with it yet" if where.is_dir()
           else f"nor does its directory {where}")
    shown = f"{missing}"
    if redact_url(config.database) != config.database:  # a password in the URL: not shown
        shown, why = redact_url(config.database), "no such file"
    raise NotFoundError(f"the database {shown} does not exist ({why}); check --database "
                        "or [scheduler] database, or start 'cronctl run' first")


def _open_store(config: Config) -> Store:
    from cronctl.config import redact_url
    from cronctl.store import open_store

    url = config.database
    try:
        return open_store(url, node_id=config.node_id, auto_migrate=config.auto_migrate)
    except StoreError:
        raise
    except Exception as exc:  # a driver error the store did not wrap
        raise StoreError(f"cannot open {redact_url(url)}: {exc}") from None


def _sqlite_file_missing(url: str) -> Path | None:
    """The SQLite file ``url`` names, when it does not exist."""
    from cronctl.store.urls import sqlite_path

    if not url.strip().lower().startswith("sqlite"):
        return None
    database = sqlite_path(url)
    if database is None or database.startswith("file:"):
        return None
    path = Path(database)
    return None if path.exists() else path.absolute()


def require_database(config: Config, what: str) -> None:
    """``database = "none"`` has no shared state to write to: :class:`StoreError`
    (exit 1) saying what to set."""
    if config.in_memory:
        raise StoreError(
            f"{what} needs a state database, and the database is 'none' (state in the "
            "scheduler's memory only); set [scheduler] database (or --database) to a SQLite "
            "or PostgreSQL URL"
        )


def open_for_writing(config: Config, what: str) -> Store:
    """The config's store, created and migrated if need be (see :func:`require_database`
    for ``database = "none"``). Unlike :func:`open_state`, this creates the SQLite file
    when nothing has run yet."""
    from cronctl.config import redact_url

    require_database(config, what)
    from cronctl.store import open_store

    try:
        store = open_store(config.database, node_id=config.node_id,
                           auto_migrate=config.auto_migrate)
    except StoreError:
        raise
    except Exception as exc:  # a driver error the store did not wrap
        raise StoreError(f"cannot open {redact_url(config.database)}: {exc}") from None
    return store


def get_execution(store: Reader | None, execution_id: int) -> ExecutionRecord:
    """Execution ``execution_id``, or :class:`NotFoundError` (exit 3)."""
    record = None if store is None else store.get_execution(execution_id)
    if record is None:
        raise NotFoundError(f"no execution {execution_id}")
    return record


# --- naming a job ---------------------------------------------------------------------

JOB_OPTION_HELP = "The job (the same as JOB: every command that names a job takes both)."


def job_named(argument: str | None, option: str | None) -> str | None:
    """The job named as the argument ``JOB`` or as ``--job JOB`` (``None``: neither):
    ``logs`` and ``cancel`` take ``--job`` (their argument is an execution id), so every
    command that names a job accepts that spelling too. :class:`UsageError` for two."""
    if argument is not None and option is not None and argument != option:
        raise UsageError(f"JOB {argument!r} and --job {option!r}: name the job once")
    return option if option is not None else argument


def one_job(argument: str | None, option: str | None) -> str:
    """:func:`job_named` for a command that needs a job."""
    job = job_named(argument, option)
    if job is None:
        raise UsageError("missing JOB (the job's id, as an argument or as --job JOB)")
    return job


# --- rendering -------------------------------------------------------------------------


def escape_for_terminal(text: str) -> str:
    """Control characters escaped, except newlines and tabs (tracebacks stay readable)."""
    from cronctl.escaping import printable

    return "\n".join(printable(line).replace("\\t", "\t") for line in text.split("\n"))


# --- shell completion ------------------------------------------------------------------


def complete_choices(*choices: str) -> Callable[[str], list[str]]:
    """A shell completer for an option that takes one of a few fixed words."""

    def complete(incomplete: str) -> list[str]:
        return [choice for choice in choices if choice.startswith(incomplete)]

    return complete


def complete_statuses(incomplete: str) -> list[str]:
    """``--status`` takes a comma-separated list: complete its last word, keeping the
    words before it, and offer only statuses not given yet."""
    from cronctl.jobs.model import ExecutionStatus

    given, _, last = incomplete.rpartition(",")
    taken = set(given.split(",")) if given else set()
    words = [status.value for status in ExecutionStatus] + ["skipped"]
    prefix = f"{given}," if given else ""
    return [prefix + word for word in words if word.startswith(last) and word not in taken]


def complete_zones(incomplete: str) -> list[str]:
    """IANA zone names for ``--tz`` that start with what was typed."""
    from zoneinfo import available_timezones

    return sorted(zone for zone in available_timezones() if zone.startswith(incomplete))


def complete_job_ids(ctx: Any, incomplete: str) -> list[str]:
    """Job ids of the current configuration that start with ``incomplete``, for shell
    completion: the TOML job files only (no entry points are imported, so a Tab stays
    fast), and nothing at all rather than an error when the configuration is broken."""
    from pathlib import Path

    from cronctl.config import load_config
    from cronctl.jobs.toml_source import read_jobs_dir
    from cronctl.options import GlobalOptions

    root = ctx.find_root() if ctx is not None else None
    options = root.obj if root is not None and isinstance(root.obj, GlobalOptions) else None
    if options is None:
        params = root.params if root is not None else {}
        config = params.get("config")
        options = GlobalOptions(config=Path(config) if config else None,
                                jobs_dir=Path(params["jobs_dir"]) if params.get("jobs_dir")
                                else None)
    try:
        settings = load_config(options).job_settings
        files = read_jobs_dir(settings.jobs_dir, required=False)
    except Exception:  # completion must never print a traceback into the shell
        return []
    return sorted(job.id for job in files.jobs if job.id.startswith(incomplete))


# --- the man pages ---------------------------------------------------------------------

MAN_PAGES = {"cronctl": ("man1", "cronctl.1"), "cronctl.toml": ("man5", "cronctl.toml.5")}


MAN_LINKS = ("man:cronctl(1)", "man:cronctl.toml(5)")
# Where `man` looks when nobody set it up: systemd's own PATH for services (man derives
# its search path from PATH), no MANPATH. `systemd-analyze verify` runs `man` for each
# `man:` link, so a link that only a venv's PATH makes resolvable fails the unit elsewhere.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def man_finds_pages() -> bool:
    """True when ``man``, with the system's default search path, finds both pages (an
    install into /usr or /usr/local); False for a venv under /opt or a checkout, and
    where there is no ``man`` at all."""
    import shutil
    import subprocess

    man = shutil.which("man", path=SYSTEM_PATH)
    if man is None:
        return False
    env = {"PATH": SYSTEM_PATH, "LANG": "C"}
    for link in MAN_LINKS:
        page, _, section = link.removeprefix("man:").rstrip(")").partition("(")
        try:
            found = subprocess.run([man, "-w", section, page], env=env, timeout=10,
                                   capture_output=True, check=False)
        except (OSError, subprocess.SubprocessError):
            return False
        if found.returncode != 0:
            return False
    return True


def man_page(name: str) -> Path | None:
    """The file of man page ``name`` (``cronctl`` or ``cronctl.toml``): as installed with
    the wheel under this Python's prefix (a venv's ``share/man``, which ``man`` finds only
    from the venv's PATH); the source checkout's first, for an editable install (the
    copy its installation made does not follow edits)."""
    import sys

    import cronctl

    section, file = MAN_PAGES[name]
    checkout = Path(cronctl.__file__).resolve().parents[1]
    for path in (checkout / "man" / file if (checkout / "pyproject.toml").is_file() else None,
                 Path(sys.prefix) / "share" / "man" / section / file):
        if path is None:
            continue
        if path.is_file():
            return path.absolute()
    return None
