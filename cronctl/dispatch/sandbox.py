"""Who a command runs as and what it may use (docs/behaviour.md#sandbox-and-output).

:func:`switch_for` resolves ``user``/``group`` in the parent, at every spawn (a user
removed since validation fails that attempt, one line, rather than running it as the
scheduler's user). ``subprocess.Popen`` then switches in the child, in C, after ``fork``
(``setgroups``, ``setregid``, ``setreuid``): the supplementary groups are the user's
(``getgrouplist``, what ``initgroups`` would set), looked up here because the child
between ``fork`` and ``exec`` must not read the group database (another thread of the
scheduler may hold the locks NSS needs).

:func:`child_setup` is the ``preexec_fn``: it runs after that switch, so the Linux
parent-death signal is armed after the credentials changed (a change of credentials
clears it), and ``setrlimit`` never raises a hard limit the user may not raise: each
limit is the smaller of the job's and the hard limit in force.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from dataclasses import dataclass, field

from cronctl.jobs.model import CommandTarget, Limits
from cronctl.jobs.sandbox import lookup_group, lookup_user

# CPU: SIGXCPU at the limit (a child may catch it to clean up), SIGKILL one second on.
_CPU_GRACE = 1


class SandboxError(Exception):
    """The attempt cannot run as the job says; the message is one line."""


@dataclass(frozen=True)
class Switch:
    """The credentials a child takes: ``uid``/``groups`` ``None`` keep the scheduler's."""

    uid: int | None
    gid: int
    groups: tuple[int, ...] | None
    env: dict[str, str] = field(default_factory=dict)  # HOME, USER, LOGNAME, SHELL


def switch_for(target: CommandTarget, *, euid: int | None = None,
               egid: int | None = None) -> Switch | None:
    """The switch ``target`` asks for (``None``: no ``user``/``group``), or
    :class:`SandboxError` when it cannot happen: an unknown user or group, or a scheduler
    that is not root (unless the job's user and group are its own)."""
    if target.user is None and target.group is None:
        return None
    entry = None
    if target.user is not None:
        entry = lookup_user(target.user)
        if entry is None:
            raise SandboxError(f"cannot run as user {target.user!r}: no such user")
    gid: int
    if target.group is not None:
        group = lookup_group(target.group)
        if group is None:
            raise SandboxError(f"cannot run as group {target.group!r}: no such group")
        gid = group.gr_gid
    else:
        assert entry is not None
        gid = entry.pw_gid
    uid = None if entry is None else entry.pw_uid
    euid = os.geteuid() if euid is None else euid
    egid = os.getegid() if egid is None else egid
    env: dict[str, str] = {}
    if entry is not None:
        env = {"HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name,
               "SHELL": entry.pw_shell or "/bin/sh"}
    if euid != 0:
        if (uid is None or uid == euid) and gid == egid:
            return Switch(None, gid, None, env)  # nothing to switch: it is us
        who = f"user {target.user!r}" if target.user is not None else f"group {target.group!r}"
        raise SandboxError(f"cannot run as {who}: the scheduler is not root "
                           f"(it runs as uid {euid})")
    groups = tuple(os.getgrouplist(entry.pw_name, gid)) if entry is not None else (gid,)
    return Switch(uid, gid, groups, env)


def rlimits(limits: Limits) -> list[tuple[int, int, int]]:
    """``(resource, soft, hard)`` for each limit the job sets."""
    out: list[tuple[int, int, int]] = []
    if limits.memory is not None:
        out.append((resource.RLIMIT_AS, limits.memory, limits.memory))
    if limits.cpu_time is not None:
        out.append((resource.RLIMIT_CPU, limits.cpu_time, limits.cpu_time + _CPU_GRACE))
    if limits.open_files is not None:
        out.append((resource.RLIMIT_NOFILE, limits.open_files, limits.open_files))
    if limits.processes is not None:
        out.append((resource.RLIMIT_NPROC, limits.processes, limits.processes))
    if limits.file_size is not None:
        out.append((resource.RLIMIT_FSIZE, limits.file_size, limits.file_size))
    return out


def child_setup(arm: Callable[[], None] | None, limits: Limits,
                join: Callable[[], None] | None = None) -> Callable[[], None] | None:
    """The ``preexec_fn`` of a child: into the attempt's cgroup (``join``, see
    :mod:`cronctl.cgroups`), the parent-death signal (``arm``), then the limits.
    Everything is resolved here, in the parent."""
    wanted = rlimits(limits)
    if not wanted and join is None:
        return arm
    infinity = resource.RLIM_INFINITY
    getrlimit, setrlimit = resource.getrlimit, resource.setrlimit

    def setup() -> None:
        if join is not None:  # (first: nothing it starts can be outside)
            join()
        if arm is not None:
            arm()
        for res, soft, hard in wanted:
            current = getrlimit(res)[1]
            if current != infinity:
                hard = min(hard, current)
            setrlimit(res, (min(soft, hard), hard))

    return setup


__all__ = ["SandboxError", "Switch", "child_setup", "rlimits", "switch_for"]
