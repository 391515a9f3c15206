"""Whether the installed distributions declare service jobs, remembered per state of the path.

Loading the job files discovers service jobs through the ``cronctl.services`` entry
points. Importing :mod:`importlib.metadata` and reading every distribution's entry points
costs 10-20 ms, about a tenth of a read command such as ``status`` or ``why``, and on
most installations finds none. So the commands that only show the jobs remember, in the
state directory, the digest of the path on which a scan found none, and skip the scan
while the path is unchanged. ``validate`` and ``run`` always scan.

The digest (:func:`path_digest`) holds every entry of Python's path and, in each
directory, the name of every ``*.dist-info`` and ``*.egg-info`` entry (where
:mod:`importlib.metadata` looks) with the status of its ``entry_points.txt``: installing,
upgrading or removing a distribution, or editing its entry points in place, changes it.
Only the absence is remembered: when a scan finds entry points, the next command scans
again (it must import them anyway).

The marker is read only when it and its directory belong to the effective user and
nobody else may write them (:func:`trusted`), and written 0600, atomically.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger("cronctl.jobs")

FORMAT = 1
MARKER = ".cronctl-no-service-entry-points"  # hidden: the state directory may be the cwd
_METADATA = (".dist-info", ".egg-info")


def status_of(path: Path | str, follow: bool = True) -> tuple[int, ...]:
    """What changes when a file or directory is created, edited, replaced or chmod-ed
    (``()`` when it does not exist; the error when it cannot be looked at)."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    except OSError as exc:  # (another user's directory): the same until it changes
        return (-1, exc.errno or 0)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode,
            st.st_uid, st.st_gid)


def path_digest(extra: Iterable[Path] = ()) -> str:
    """The digest of Python's path (and of ``extra`` directories a load will append to
    it) as far as installed distributions and their entry points go."""
    h = hashlib.sha256()
    places = list(sys.path)
    for resolved in (str(p.resolve()) for p in extra):
        if resolved not in places:
            places.append(resolved)
    for place in places:
        folder = place or "."
        egg = os.path.basename(folder).lower().endswith(".egg")
        try:
            names = sorted(e.name for e in os.scandir(folder)
                           if e.name.lower().endswith(_METADATA)
                           or (egg and e.name.lower() == "egg-info"))
        except OSError:  # a zip file, or a missing or unreadable directory: its status
            h.update(repr((FORMAT, place, status_of(folder))).encode("utf-8", "surrogateescape"))
            continue
        # (not the directory's own status: the state directory may be on the path, and
        # every file written there would change it)
        h.update(repr((FORMAT, place, len(names))).encode("utf-8", "surrogateescape"))
        for name in names:
            points = status_of(os.path.join(folder, name, "entry_points.txt"))
            h.update(repr((name, points)).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def known_absent(directory: Path, digest: str) -> bool:
    """Did a scan on this very path find no service entry points?"""
    marker = directory / MARKER
    if not trusted(marker):
        return False
    try:
        return marker.read_text(encoding="ascii") == digest
    except (OSError, UnicodeDecodeError):
        return False


def remember_absent(directory: Path, digest: str) -> None:
    """Keep the digest of a path on which the scan found no service entry points (when
    the state directory exists and is this user's; a read command never creates it)."""
    marker = directory / MARKER
    if not trusted_folder(directory):
        return
    part = directory / f"{MARKER}.{os.getpid()}"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(digest)
            os.replace(part, marker)
        except BaseException:
            part.unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.debug("%s not written: %s", marker, exc)


def trusted(path: Path) -> bool:
    """The file and its directory belong to this user and nobody else may write them."""
    euid = os.geteuid()
    try:
        st = path.lstat()
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_uid != euid or st.st_mode & 0o022:
        return False
    return trusted_folder(path.parent)


def trusted_folder(folder: Path) -> bool:
    """The directory belongs to this user and nobody else may write in it."""
    try:
        st = folder.stat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
