"""The SQLite state file under the feet of a running node (stdlib only).

Deleting (or replacing) the file a scheduler has open changes nothing for SQLite: the
process keeps reading and writing the unlinked inode, silently, while a node started
afterwards creates a fresh file at the path and runs every single_instance occurrence a
second time. So a node compares the file it opened with the path on each heartbeat and
stops acting when they differ, and no process creates a new database at a path whose
deleted file another process still holds.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FileId = tuple[int, int]  # (st_dev, st_ino)


def file_id(path: str) -> FileId | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def replaced(path: str, opened: FileId) -> str | None:
    """Why the file at ``path`` is no longer the one opened (``None``: it is)."""
    now = file_id(path)
    if now is None:
        return f"the database file {path} was deleted while this node used it"
    if now != opened:
        return f"the database file {path} was replaced while this node used it"
    return None


def holders_of_deleted(path: str) -> list[int]:
    """Processes (that this one may look at) holding ``path`` open after it was deleted."""
    wanted = f"{os.path.abspath(path)} (deleted)"
    mine = os.getpid()
    found: list[int] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == mine:
                continue
            with contextlib.suppress(OSError):
                for fd in os.scandir(f"/proc/{entry.name}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(fd.path) == wanted:
                            found.append(int(entry.name))
                            break
    return found


def refuse_if_held_deleted(path: str) -> str | None:
    """Why a new database must not be created at ``path`` (``None``: it may)."""
    if Path(path).exists():
        return None
    holders = holders_of_deleted(path)
    if not holders:
        return None
    pids = ", ".join(str(p) for p in sorted(holders))
    return (f"the database file {path} was deleted while process {pids} still uses it: "
            "stop that process (or restore the file from a backup) first; cronctl does not "
            "create a second database beside it")


__all__ = ["FileId", "file_id", "holders_of_deleted", "refuse_if_held_deleted", "replaced"]
