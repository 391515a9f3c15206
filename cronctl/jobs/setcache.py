"""The validated job set of the last ``cronctl list``, kept to list 100,000 jobs quickly.

Loading and validating 100,000 jobs takes seconds (``tomllib`` alone reads them in more
than one); unpickling the validated set takes a third of that. ``list`` and the
dashboard show the set; they do not decide anything with it. ``validate`` and ``run``
never read this cache: they always read the files.

The cache is one pickle per configuration file, under the state directory
(:attr:`cronctl.config.Config.state_dir`). It is used only when everything the set was built from is
unchanged, compared as a digest of:

- the file format, Python's and cronctl's versions, and the size and modification time
  of every module of the installed ``cronctl`` package (a changed model never unpickles
  into a wrong shape);
- the configuration file's status (size, times, inode, mode, owner) and the job
  settings read from it; the effective user (root checks file ownership); ``PATH``;
- Python's path and the distributions installed on it
  (:func:`cronctl.jobs.pathscan.path_digest`: installing, upgrading or removing one
  changes it: see below);
- every entry of the jobs directory: its name, and the status of the entry and of what
  a link points to (an edited, added, removed, renamed, chmod-ed or re-linked file
  changes the digest).

And only while nothing outside those inputs can change the set: no ``cronctl.services``
entry points (their code is not in the jobs directory; looked for when a set is
written, so a distribution that brings some afterwards changes the path's digest), no
calendar read from an ``ics`` file, no entry older than :data:`MAX_AGE` (validation
measures "never fires again" from now). On a hit the commands' programs and ``python:``
targets are checked again (a few distinct look-ups), so an uninstalled program is not
hidden by the cache.

Pickle runs code when loaded, so a cache file is read only when it and its directory
belong to the effective user and nobody else may write them; it is written 0600,
atomically, by a child process that the command does not wait for. Sets of fewer than
:data:`MIN_JOBS` jobs are not cached. Anything unexpected (a corrupt, foreign or
unreadable file) is a miss.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cronctl.jobs.loader import LoadResult
from cronctl.jobs.model import CommandTarget, PythonTarget
from cronctl.jobs.pathscan import path_digest, status_of, trusted, trusted_folder
from cronctl.jobs.settings import JobSettings

log = logging.getLogger("cronctl.jobs")

FORMAT = 1
MAX_AGE = 3600.0  # seconds: an older entry is rebuilt
MIN_JOBS = 2000  # smaller sets load in well under a second: no cache for them
_PACKAGE = Path(__file__).resolve().parents[1]


def cached_load(settings: JobSettings, config_path: Path | None, directory: Path,
                load: Callable[[], LoadResult]) -> LoadResult:
    """``load()``'s result, from the cache under ``directory`` when the inputs are
    unchanged; otherwise ``load()``, kept for the next call when it may be."""
    try:
        key = _digest(settings, config_path)
    except (OSError, ValueError):
        return load()
    if key is None:
        return load()
    target = directory / f"jobs-{_name(config_path, settings)}.pickle"
    found = _read(target, key)
    if found is not None:
        return found
    result = load()
    if (result.ok and len(result.jobs) >= MIN_JOBS and _cacheable(result)
            and not _services()):
        _write_aside(target, key, result)
    return result


# --- the digest of the inputs ----------------------------------------------------------


def _name(config_path: Path | None, settings: JobSettings) -> str:
    where = str(config_path.resolve()) if config_path else str(settings.jobs_dir.resolve())
    return hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _digest(settings: JobSettings, config_path: Path | None) -> str | None:
    """The inputs' digest; ``None`` when the set depends on something it cannot see."""
    h = hashlib.sha256()

    def add(*parts: object) -> None:
        h.update(repr(parts).encode("utf-8", "surrogateescape"))
        h.update(b"\0")

    from cronctl import __version__

    add(FORMAT, sys.version, __version__, os.geteuid(), os.environ.get("PATH"))
    # Installing or removing a distribution (one with service entry points among them)
    # changes the path's digest. So the entry points are looked at only when a set is
    # written (see _services), not on every read: importing importlib.metadata and
    # scanning cost ~20 ms a command. The load appends python_path (when trusted) and the
    # config's directory to the path: service packages are found there too.
    add("path", path_digest((*settings.python_path, settings.base_dir)))
    for folder, _, names in sorted(os.walk(_PACKAGE)):
        for name in sorted(names):
            if name.endswith(".py"):
                add(folder, name, status_of(Path(folder, name), True))
    if config_path is not None:
        add("config", str(config_path.resolve()), status_of(config_path, True),
            status_of(config_path, False))
    add("settings", repr(settings))
    jobs_dir = settings.jobs_dir
    add("jobs_dir", str(jobs_dir.absolute()), status_of(jobs_dir, True),
        status_of(jobs_dir, False))
    try:
        names = sorted(os.listdir(jobs_dir))
    except FileNotFoundError:
        names = []
    for name in names:
        entry = jobs_dir / name
        add(name, status_of(entry, False), status_of(entry, True))
    return h.hexdigest()


def _services() -> bool:
    """Whether any distribution declares ``cronctl.services`` entry points: their job
    sets come from code the digest does not see, so no set is cached then."""
    from cronctl.jobs.registry import service_entry_points

    return bool(service_entry_points())


def _cacheable(result: LoadResult) -> bool:
    return not any(calendar.ics is not None for job in result.jobs for calendar in job.calendars)


# --- reading and writing -----------------------------------------------------------------


def _read(path: Path, key: str) -> LoadResult | None:
    if not trusted(path):
        return None
    try:
        with path.open("rb") as f:
            # The key first, on its own: a stale entry is known without reading the set.
            stored_key, written = pickle.load(f)
            if stored_key != key or not 0 <= time.time() - written <= MAX_AGE:
                return None
            result = pickle.load(f)
    except Exception as exc:  # a corrupt or foreign file is a miss, never an error
        log.debug("job set cache %s not used: %s", path, exc)
        return None
    if not isinstance(result, LoadResult):
        return None
    if not _targets_still_resolve(result):
        return None
    return result


def _targets_still_resolve(result: LoadResult) -> bool:
    """Do the commands' programs and the ``python:`` targets still give what the cached
    load found (a program warned about as missing may still be missing; one that went
    missing since, or a target that no longer imports, is a miss)?"""
    from cronctl.jobs import checks

    known = {warning.message for warning in result.warnings}
    checks.clear_python_cache()  # look at the disk now, as a load would
    for job in result.jobs:  # (both checks keep their answers per program and module)
        target = job.target
        if not job.enabled:
            continue
        if isinstance(target, CommandTarget):
            problem = checks.check_command(target)
        elif isinstance(target, PythonTarget):
            problem = checks.check_python_target(target)
        else:
            problem = None
        if problem and problem not in known:
            return False
    return True


def _write_aside(path: Path, key: str, result: LoadResult) -> None:
    """Write the cache in a child process, so the command is not kept waiting (pickling
    100,000 jobs takes ~1.7 s): the child has the loaded set already (fork), closes the
    standard streams at once (a pipe to ``less`` ends when the command ends) and exits
    without running the parent's exit handlers."""
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        return
    code = 0
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        _write(path, key, result)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _write(path: Path, key: str, result: LoadResult) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not trusted_folder(path.parent):
            return
        part = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump((key, time.time()), f, protocol=pickle.HIGHEST_PROTOCOL)
                pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(part, path)
        except BaseException:
            part.unlink(missing_ok=True)
            raise
    except (OSError, pickle.PicklingError, RecursionError, TypeError) as exc:
        log.debug("job set cache %s not written: %s", path, exc)
