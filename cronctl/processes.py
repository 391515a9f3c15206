"""Which process is which, on this host: identities that survive pid reuse.

A pid alone names a process only while it lives: once it exits, the kernel may hand the
number to an unrelated process. So cronctl records a process as its pid together with an
*identity*, ``<boot id>:<start time>``: the host's boot id
(``/proc/sys/kernel/random/boot_id``, new at every boot) and the process's start time in
clock ticks since boot (field 22 of ``/proc/<pid>/stat``). A process with the same pid
and the same identity is the same process; a different start time means the pid was
reused; a different boot id means another host or an earlier boot, where nothing can be
checked from here.

Linux only (``/proc``). Elsewhere :func:`identity` is ``None`` and the checks answer
"cannot tell" (``None``); callers then fall back on what they did before.

Stdlib only: the store (liveness on SQLite), dispatch (recording a child) and the runtime
(terminating what an interrupted attempt left behind) all use it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

_PROC = Path("/proc")


@functools.cache
def boot_id() -> str | None:
    """This boot of this host, or ``None`` without ``/proc``."""
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    # The command name is in parentheses and may itself contain ") ": split after the last.
    _, _, rest = text.rpartition(")")
    fields = rest.split()
    return fields if len(fields) >= 20 else None


def start_ticks(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None if it does not exist."""
    fields = _stat(pid)
    return None if fields is None else int(fields[19])  # field 22 of the whole line


def identity(pid: int) -> str | None:
    """``<boot id>:<start ticks>`` of the running process ``pid``, or None (no such process,
    or no ``/proc``)."""
    boot, ticks = boot_id(), start_ticks(pid)
    if boot is None or ticks is None:
        return None
    return f"{boot}:{ticks}"


def _split(ident: str | None) -> tuple[str, int] | None:
    if not ident:
        return None
    boot, _, ticks = ident.rpartition(":")
    try:
        return boot, int(ticks)
    except ValueError:
        return None


def on_this_boot(ident: str | None) -> bool:
    """Whether ``ident`` names a process of this boot of this host (checkable here)."""
    parts = _split(ident)
    return parts is not None and boot_id() is not None and parts[0] == boot_id()


def alive(pid: int, ident: str | None) -> bool | None:
    """Is the process ``pid`` with identity ``ident`` still running (zombies count as
    gone)? None when it cannot be told from here: no identity, or one of another host
    or boot."""
    parts = _split(ident)
    if parts is None or not on_this_boot(ident):
        return None
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == parts[1]


def group_members(pgid: int, ident: str | None) -> list[int] | None:
    """The live (non-zombie) processes of the process group ``pgid`` whose leader had the
    identity ``ident``; None when that cannot be told from here.

    While any member lives the kernel does not reuse the group id as a pid, so a member
    with process group ``pgid`` that started no earlier than the leader belongs to the
    recorded group. If the leader's pid now names a process with another start time, the
    group is gone and the number was reused."""
    parts = _split(ident)
    if parts is None or not on_this_boot(ident):
        return None
    leader = _stat(pgid)
    if leader is not None and leader[0] not in ("Z", "X") and int(leader[19]) != parts[1]:
        return []  # the pid was reused: our group ended
    members: list[int] = []
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return None
    for name in entries:
        if not name.isdigit():
            continue
        fields = _stat(int(name))
        # fields[2] is the process group (field 5), fields[19] the start time.
        if (fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid
                and int(fields[19]) >= parts[1]):
            members.append(int(name))
    return sorted(members)


__all__ = ["alive", "boot_id", "group_members", "identity", "on_this_boot", "start_ticks"]
