"""What cronctl refuses to load: files another user could have written (docs/trust.md).

cron and sshd refuse a crontab or an ``authorized_keys`` that others can write; so does
cronctl, for what decides what runs as root: ``cronctl.toml``, the jobs directory and its
``*.toml`` files, the ``python_path`` directories and the modules of ``python:`` targets.
A file (or the target of a symlink) must be owned by root and writable by nobody else,
and so must every directory above it, up to ``/``: whoever can write a directory can
replace what lies in it. A directory writable by all with the sticky bit (``/tmp``) is
allowed above: its other users cannot replace root's entries.

Those checks apply when the effective user is root. Python code is held to more: once a
command loads jobs (and in the worker of an ``isolation = "process"`` attempt) a finder on
``sys.meta_path`` (:class:`ModuleGuard`) judges every file an import would execute
before it runs, whoever cronctl runs as: a job's own module, what it imports, a service
entry point's module and what that imports. Each must be owned by root or the user
cronctl runs as and be writable by nobody else, and so must its directories (and the
cached bytecode Python would load instead of the source). ``--allow-insecure`` turns the
refusals into one WARNING per file. A leaf module (stdlib only): config, jobs, dispatch
and the CLI use it.
"""

from __future__ import annotations

import importlib.machinery
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import types
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec

_permitted = False


def permit_insecure() -> None:
    """``--allow-insecure``: load what the checks would refuse (the CLI warns once)."""
    global _permitted
    _permitted = True


def checking() -> bool:
    return not _permitted and os.geteuid() == 0


def permitted() -> bool:
    """Whether ``--allow-insecure`` was given (the worker of an attempt is told so)."""
    return _permitted


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


_ROOT_ONLY = frozenset((0,))


def _problem(path: Path | str, *, directory: bool,
             owners: frozenset[int] = _ROOT_ONLY) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # missing or unreadable: whoever reads it says so
    return _judge(str(path), st, directory=directory, owners=owners)


def _judge(path: str, st: os.stat_result, *, directory: bool,
           owners: frozenset[int]) -> str | None:
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in owners:
        return f"{path} is owned by {_owner(st.st_uid)}, not {_owners_text(owners)}"
    if mode & 0o022 and not (directory and mode & stat.S_ISVTX and mode & 0o002):
        who = "group- and world-writable" if mode & 0o022 == 0o022 else (
            "world-writable" if mode & 0o002 else "group-writable")
        return f"{path} is {who} (mode {mode:04o})"
    return None


def _owners_text(owners: frozenset[int]) -> str:
    others = [_owner(uid) for uid in sorted(owners) if uid != 0]
    return " or ".join(["root", *others])


def _chain(path: Path) -> str | None:
    """The first problem of ``path`` (a file or a directory) and the directories above."""
    if not os.path.exists(path):
        return None  # a dangling link: whoever reads it says so
    is_dir = path.is_dir()
    problem = _problem(path, directory=is_dir)
    if problem is not None:
        return problem
    for parent in path.parents:
        problem = _problem(parent, directory=True)
        if problem is not None:
            return problem
    return None


def untrusted(path: Path, what: str) -> str | None:
    """Why root must not load ``path`` (``what``: "config file", "job file", ...), or
    ``None``. A symlink is judged where it lies and where it points."""
    if not checking():
        return None
    try:
        absolute = path.absolute()
        if not os.path.lexists(absolute):
            return None  # missing: whoever reads it says so
        problem = _chain(absolute.parent) if absolute.is_symlink() else None
        if problem is None:
            problem = _chain(absolute.resolve())
    except (OSError, RuntimeError, ValueError):
        return None  # a loop, a name too long, a NUL: the reader reports it
    if problem is None:
        return None
    return (f"{what} {path} is not loaded: {problem}; cronctl runs as root and loads only "
            "what root alone can write (chown root, chmod go-w), or pass --allow-insecure")


def module_files(module: str) -> list[Path]:
    """The files (or package directories) ``import module`` would execute, found without
    importing anything: a check must come before the import runs the code."""
    out: list[Path] = []
    search: list[str] | None = None
    name = ""
    for part in module.split("."):
        name = f"{name}.{part}" if name else part
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) is None \
                and search is None and "." not in name:
            return out  # a built-in or frozen module
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            return out  # not found: the import says so
        if spec.origin and spec.has_location:
            out.append(Path(spec.origin))
        locations = spec.submodule_search_locations
        if locations is None:
            break
        search = list(locations)
        out.extend(Path(p) for p in search)
    return out


def untrusted_module(module: str) -> str | None:
    """Why root must not import ``module`` (a ``python:`` target's), or ``None``."""
    if not checking():
        return None
    for path in module_files(module):
        problem = untrusted(path, f"module {module!r}:")
        if problem is not None:
            return problem
    return None


def untrusted_state(path: str) -> str | None:
    """Why the scheduler must not use the SQLite state file ``path`` (the first problem:
    which file and its owner or mode), or ``None``.

    Its rows say which process groups recovery ends and what ran; whoever can write the
    file (or its ``-wal``, ``-shm`` or ``-journal``, or replace them in its directory)
    writes those. So the file, its companions that exist and its directory must belong
    to root or the user cronctl runs as and be writable by nobody else; unlike the
    directories above, the file's own directory may not be a sticky world-writable one
    (another user could create the ``-wal`` before SQLite does). Whoever cronctl runs
    as; with ``--allow-insecure`` the caller warns instead of refusing."""
    owners = frozenset((0, os.geteuid()))
    try:
        real = os.path.realpath(path)
        folders = dict.fromkeys((os.path.dirname(os.path.abspath(path)),
                                 os.path.dirname(real)))
        for folder in folders:
            if not os.path.isdir(folder):
                return None  # not there yet: opening it says so
            problem = _problem(folder, directory=False, owners=owners)  # (no sticky pass)
            for parent in Path(folder).parents:
                if problem is not None:
                    break
                problem = _problem(parent, directory=True, owners=owners)
            if problem is not None:
                return problem
        for name in (real, f"{real}-wal", f"{real}-shm", f"{real}-journal"):
            problem = _problem(name, directory=False, owners=owners)
            if problem is not None:
                return problem
    except (OSError, ValueError):
        return None  # a name too long, a NUL: opening it says so
    return None


# --- the import guard: every Python file judged before it runs ----------------------


class UntrustedFile(ImportError):
    """An import :class:`ModuleGuard` refused; the message names the file and why."""


class ModuleGuard:
    """A ``sys.meta_path`` finder just before Python's path finder: it finds a module as
    the path finder would and judges every file the import would execute (the source or
    extension, the bytecode cached for it, and their directories up to ``/``, both as
    named and where symlinks lead) before it hands the spec on. Built-in and frozen
    modules are found before it, as always. What it judged is cached per path for the
    process (about one ``stat`` per new file, one per new directory)."""

    def __init__(self) -> None:
        self.owners = frozenset((0, os.geteuid()))
        self._dirs: dict[str, str | None] = {}  # directory -> its chain's first problem
        self._warned: set[str] = set()

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or not spec.has_location or not spec.origin:
            return spec  # not found here, or a namespace package (no code of its own)
        problem = self.judge(spec.origin, spec.cached)
        if problem is None:
            return spec
        if _permitted:
            if spec.origin not in self._warned:
                self._warned.add(spec.origin)
                import logging

                logging.getLogger("cronctl.trust").warning(
                    "--allow-insecure: loading module %s although %s", name, problem)
            return spec
        raise UntrustedFile(
            f"module {name} is not loaded: {problem}; cronctl "
            f"runs Python code only from files that {_owners_text(self.owners)} alone can "
            "write (chown, chmod go-w), or pass --allow-insecure", name=name,
            path=spec.origin)

    def invalidate_caches(self) -> None:
        """Judge again (``importlib.invalidate_caches()``, and every job load)."""
        self._dirs.clear()
        self._warned.clear()

    def judge(self, origin: str, cached: str | None = None) -> str | None:
        """The first problem of the file ``origin`` (and of ``cached``, its bytecode,
        when that or its directory exists), or ``None``."""
        problem = self._file(origin)
        if problem is None and cached:
            folder = os.path.dirname(cached)
            if os.path.isdir(folder):
                problem = self._folder(folder)
                if problem is None and os.path.lexists(cached):
                    problem = self._file(cached)
        return problem

    def _file(self, path: str) -> str | None:
        folder = os.path.dirname(os.path.abspath(path))
        problem = self._folder(folder)
        if problem is not None:
            return problem
        try:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):  # judged where it points, and that directory
                real = os.path.realpath(path)
                problem = self._folder(os.path.dirname(real))
                if problem is not None:
                    return problem
                st = os.stat(real)
        except OSError:
            return None  # (inside a zip archive, judged as a directory; or gone)
        return _judge(path, st, directory=False, owners=self.owners)

    def _folder(self, folder: str) -> str | None:
        """The first problem of ``folder`` and the directories above; a symlink among
        them is judged where it lies (its directory) and where it leads."""
        if folder in self._dirs:
            return self._dirs[folder]
        parent = os.path.dirname(folder)
        problem = self._folder(parent) if parent != folder else None
        if problem is None:
            try:
                st = os.lstat(folder)
            except OSError:
                st = None  # missing: whoever reads it says so
            if st is not None and stat.S_ISLNK(st.st_mode):
                problem = self._folder(os.path.realpath(folder))
            elif st is not None:
                problem = _judge(folder, st, directory=True, owners=self.owners)
        self._dirs[folder] = problem
        return problem


_guard: ModuleGuard | None = None


def install_guard(*, fresh: bool = True) -> ModuleGuard:
    """Put the :class:`ModuleGuard` on ``sys.meta_path`` (once per process; a later call
    makes it judge again, unless not ``fresh``) before any Python code of a job or a
    service is imported."""
    global _guard
    for finder in sys.meta_path:
        if isinstance(finder, ModuleGuard):
            if fresh:
                finder.invalidate_caches()
            _guard = finder
            return finder
    guard = _guard = ModuleGuard()
    where = next((i for i, f in enumerate(sys.meta_path)
                  if f is importlib.machinery.PathFinder), len(sys.meta_path))
    sys.meta_path.insert(where, guard)
    return guard


def untrusted_entry_point(ep: object) -> str | None:
    """Why the ``entry_points.txt`` that declares the entry point ``ep`` is not believed,
    or ``None``: whoever can write it chooses which module cronctl imports (any module
    the guard allows, the standard library's included). Judged as the guard judges code;
    with ``--allow-insecure``, one WARNING and ``None``."""
    folder = getattr(getattr(ep, "dist", None), "_path", None)  # (a PathDistribution's)
    if folder is None:
        return None
    path = os.path.join(os.fspath(folder), "entry_points.txt")
    problem = (_guard or ModuleGuard()).judge(path)
    if problem is None:
        return None
    if _permitted:
        import logging

        logging.getLogger("cronctl.trust").warning(
            "--allow-insecure: reading the entry points of %s although %s", path, problem)
        return None
    return f"{path} is not read: {problem} (or pass --allow-insecure)"


__all__ = ["ModuleGuard", "UntrustedFile", "checking", "install_guard", "module_files",
           "permit_insecure", "permitted", "untrusted", "untrusted_entry_point",
           "untrusted_module", "untrusted_state"]
