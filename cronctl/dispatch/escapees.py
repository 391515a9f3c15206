"""Processes of an attempt that left its process group (``setsid``, a double fork).

Killing the attempt's process group misses them, and once their parent exits they belong
to init: the process tree no longer leads to them either. What they keep is the
environment they inherited: each command gets ``CRONCTL_ATTEMPT_TAG``, a value of its own
(random: the occurrence id and attempt are the same for two schedulers on one host), set
after the job's ``env`` so that cannot override it. When an attempt ends (success,
failure, timeout, cancel), the reactor looks for the processes that still carry it and
ends them as it ends a command: SIGTERM, then SIGKILL after ``kill_timeout``.

When the scheduler itself died, nobody kept the tag: recovery on this host finds what
the attempt left by its occurrence id, attempt and execution id, and by the tag's
scope, a digest of the scheduler's database that every node of this host using it
computes alike (:func:`scope_of`). A scheduler with another database may run a job of
the same name at the same instant, even under the same execution id; its tags carry
another scope.

A process that cleared or replaced its environment, or runs as another user whose
``/proc/<pid>/environ`` the scheduler may not read, is not found. Reading every
process's environment costs about 8 microseconds a process (1 ms on a host with 125),
so after a short attempt only the pids allocated since its leader are read (pids are
handed out in increasing order, wrapping at ``pid_max``): a command that runs every
second leaves a range of a few pids to look at.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Callable

TAG_ENV = "CRONCTL_ATTEMPT_TAG"


def new_tag(scope: str = "") -> str:
    """A new attempt's tag: random, after its scheduler's ``scope`` (see :func:`scope_of`)
    when it has one."""
    return f"{scope}-{uuid.uuid4().hex}" if scope else uuid.uuid4().hex


def scope_of(database: str) -> str:
    """The tag prefix of the attempts of schedulers using the database named ``database``
    (``cronctl.store.urls.database_identity``): a short digest, the same on every node of
    this host that uses it. Recovery ends only what carries its own database's scope: a
    scheduler on this host with a database of its own may run a job of the same name at
    the same instant, with the same occurrence id, attempt and even execution id."""
    if not database:
        return ""
    import hashlib

    return hashlib.sha256(database.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def marker(tag: str) -> bytes:
    """The environment entry every process of the attempt tagged ``tag`` inherits."""
    return f"\0{TAG_ENV}={tag}\0".encode()


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            return b"\0" + file.read()  # (so the first entry also follows a NUL)
    except OSError:  # gone, not ours to read, no /proc
        return b""


def carries(pid: int, *marks: bytes) -> bool:
    """Whether the environment of ``pid`` holds every one of ``marks`` (read once)."""
    env = _environ(pid)
    return all(mark in env for mark in marks)


def _last_pid() -> int | None:
    try:
        with open("/proc/sys/kernel/ns_last_pid", "rb") as file:
            return int(file.read())
    except (OSError, ValueError):
        return None


def _in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except OSError:
        return True  # gone already


def find(mark: bytes, after: int | None = None, group: int | None = None) -> list[int]:
    """The pids of the processes (other than this one) that carry ``mark``, outside
    process group ``group`` (its members just got SIGKILL and may not be gone yet); with
    ``after`` (the leader's pid, when the pids cannot have wrapped around since it
    started), only those allocated after it."""
    own = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    pids = [int(name) for name in names if name.isdigit()]
    last = _last_pid() if after is not None else None
    if after is not None and last is not None:
        if after <= last:
            pids = [pid for pid in pids if after < pid <= last]
        else:  # wrapped past pid_max once
            pids = [pid for pid in pids if pid > after or pid <= last]
    return [pid for pid in pids if pid != own and carries(pid, mark)
            and (group is None or not _in_group(pid, group))]


def signal_marked(pids: list[int], mark: bytes, sig: signal.Signals) -> list[int]:
    """Send ``sig`` to those of ``pids`` that still carry ``mark`` (a pid reused since
    does not); the ones signalled."""
    sent: list[int] = []
    for pid in pids:
        if carries(pid, mark):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
                sent.append(pid)
    return sent


SHORT_ATTEMPT = 60.0  # seconds: escapees are looked for among the pids after its leader


class Escaped:
    """Processes of a finished attempt that got SIGTERM: SIGKILL when its timer fires."""

    __slots__ = ("mark", "pids")

    def __init__(self, pids: list[int], mark: bytes) -> None:
        self.pids = pids
        self.mark = mark


def end_escaped(tag: str, leader: int, started_at: float, *, shutdown: bool,
                warn: Callable[[str], None]) -> Escaped | None:
    """The attempt tagged ``tag`` (its leader ``leader``, started at monotonic
    ``started_at``) ended: SIGTERM (SIGKILL at ``shutdown``) to what it started outside its
    process group, one ``warn`` line naming them. Returns what still needs its SIGKILL
    after ``kill_timeout`` (``None``: nothing, or killed at once)."""
    mark = marker(tag)
    # A minute cannot use up the pid space (pid_max >= 32768): look after the leader.
    short = time.monotonic() - started_at < SHORT_ATTEMPT
    found = find(mark, leader if short else None, group=leader)
    if not found:
        return None
    sent = signal_marked(found, mark, signal.SIGKILL if shutdown else signal.SIGTERM)
    if not sent:
        return None
    warn(f"ended {len(sent)} process(es) the attempt started outside its process group "
         f"(setsid): pid {', '.join(map(str, sent))}")
    return None if shutdown else Escaped(sent, mark)


def attempt_marks(occurrence_id: str, attempt: int, execution_id: int,
                  scope: str = "") -> list[bytes]:
    """What every process of that attempt carries in its environment (its tag only by
    its ``scope``: the random rest was never recorded)."""
    marks = [f"\0CRONCTL_OCCURRENCE_ID={occurrence_id}\0".encode(),
             f"\0CRONCTL_ATTEMPT={attempt}\0".encode(),
             f"\0CRONCTL_EXECUTION_ID={execution_id}\0".encode()]
    if scope:
        marks.append(f"\0{TAG_ENV}={scope}-".encode())
    return marks


def foreign_group(group: int, members: list[int], occurrence_id: str, attempt: int,
                  execution_id: int, scope: str = "") -> str | None:
    """Why the live process group ``group`` (its ``members``) recorded for that attempt
    is not known to be the attempt's own, or ``None`` when it is.

    A row of the state database names the group, but whoever can write the database can
    name any group with its leader's start time (docs/trust.md): the group is the
    attempt's only when its leader carries the attempt's environment, or, once the leader
    is gone (it dies with its scheduler), when one of the members it left does (no
    process can join a group of another session, so they were started inside it)."""
    marks = attempt_marks(occurrence_id, attempt, execution_id, scope)
    if group in members:
        if carries(group, *marks):
            return None
        return (f"its leader (pid {group}) does not carry that attempt's environment "
                f"(CRONCTL_EXECUTION_ID={execution_id})")
    if any(carries(pid, *marks) for pid in members):
        return None
    return (f"none of its processes (pid {', '.join(map(str, members))}) carries that "
            f"attempt's environment (CRONCTL_EXECUTION_ID={execution_id})")


def end_left_behind(occurrence_id: str, attempt: int, execution_id: int,
                    group: int | None, scope: str = "") -> list[int]:
    """Recovery of an attempt whose scheduler died (SIGKILL): SIGKILL to what that attempt
    started outside its process group and still runs on this host (``setsid``), found by
    its occurrence id, attempt and execution id in their environment, and the ``scope``
    of its tag (:func:`scope_of`: another scheduler on this host with a database of its
    own may run a job of the same name at the same instant, and its attempt carries the
    same occurrence id and attempt number, and may carry the same execution id). Its
    process group died with the scheduler (the parent-death signal); these are what would
    otherwise run on beside the next attempt. Members of its recorded process ``group``
    are left to recovery, which ends the group and records when. The pids signalled."""
    mark, *also = attempt_marks(occurrence_id, attempt, execution_id, scope)
    found = [pid for pid in find(mark, group=group) if carries(pid, *also)]
    return signal_marked(found, mark, signal.SIGKILL) if found else []
