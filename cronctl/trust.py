"""What cronctl running as root refuses to load: files another user could have written.

cron and sshd refuse a crontab or an ``authorized_keys`` that others can write; so does
cronctl, for what decides what runs as root: ``cronctl.toml``, the jobs directory and its
``*.toml`` files, the ``python_path`` directories and the modules of ``python:`` targets.
A file (or the target of a symlink) must be owned by root and writable by nobody else,
and so must every directory above it, up to ``/``: whoever can write a directory can
replace what lies in it. A directory writable by all with the sticky bit (``/tmp``) is
allowed above: its other users cannot replace root's entries.

Only when the effective user is root (a user who runs cronctl as themselves can harm
only themselves). ``--allow-insecure`` turns the checks off, with one WARNING.
A leaf module (stdlib only): config, jobs and the CLI use it.
"""

from __future__ import annotations

import importlib.machinery
import os
import stat
import sys
from pathlib import Path

_permitted = False


def permit_insecure() -> None:
    """``--allow-insecure``: load what the checks would refuse (the CLI warns once)."""
    global _permitted
    _permitted = True


def checking() -> bool:
    return not _permitted and os.geteuid() == 0


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


def _problem(path: Path, *, directory: bool) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # missing or unreadable: whoever reads it says so
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != 0:
        return f"{path} is owned by {_owner(st.st_uid)}, not root"
    if mode & 0o022 and not (directory and mode & stat.S_ISVTX and mode & 0o002):
        who = "group- and world-writable" if mode & 0o022 == 0o022 else (
            "world-writable" if mode & 0o002 else "group-writable")
        return f"{path} is {who} (mode {mode:04o})"
    return None


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


__all__ = ["checking", "module_files", "permit_insecure", "untrusted", "untrusted_module"]
