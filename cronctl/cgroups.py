"""Each command attempt in a cgroup (v2) of its own, ended with it (docs/containment.md).

A process group ends what stays in it; a process that calls ``setsid`` (or a daemon's
double fork) leaves it, and its parent's death leaves it to init. What the kernel keeps
whatever a process does is its cgroup: a child of a cgroup stays in it unless someone
allowed to write ``cgroup.procs`` moves it. Where cgroup v2 is delegated to cronctl
(systemd ``Delegate=yes``, or a directory named by ``[scheduler] cgroup``) each attempt
gets ``<base>/attempt-<tag>``, the child joins it between ``fork`` and ``exec`` (so none
of its descendants was ever outside), and ending the attempt (its leader exited, a
timeout, a cancel) writes ``cgroup.kill`` (or freezes the cgroup and SIGKILLs every
member) and removes the directory. Elsewhere the process group and the attempt's
environment tag are what is ended (:mod:`cronctl.dispatch.escapees`).

The child writes ``0`` ("myself") into an fd of ``cgroup.procs`` the scheduler opened:
since Linux 5.16 the permission to move is judged by the opener's credentials, so a
child that already switched to the job's ``user`` can still move itself.

cgroup v2 forbids processes in a cgroup whose children have controllers ("no internal
processes"): when the scheduler itself is in ``<base>`` (the delegated case) it first
moves to ``<base>/scheduler``, a leaf beside the attempts.

Stdlib only: the dispatcher (the attempts), ``run`` (the base), ``status`` and
``validate`` (which one is in force) use it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass

AUTO, OFF = "auto", "off"
LEAF = "scheduler"  # where the scheduler moves when it is in its own base
PREFIX = "attempt-"
_DELEGATE_XATTRS = ("trusted.delegate", "user.delegate")  # systemd >= 251 sets one
# Set by the unit `cronctl systemd-unit` writes, beside Delegate=yes: reading the
# trusted.* xattr needs CAP_SYS_ADMIN, which that unit's scheduler does not have.
DELEGATED_ENV = "CRONCTL_CGROUP_DELEGATED"


def setting(value: str) -> str:
    """``[scheduler] cgroup`` as configured: ``auto``, ``off`` or an absolute path
    (``ValueError``, one line, otherwise)."""
    if value in (AUTO, OFF):
        return value
    if not value.startswith("/") or "\x00" in value:
        raise ValueError(f"must be \"auto\", \"off\" or the absolute path of a cgroup v2 "
                         f"directory, not {value!r}")
    return os.path.normpath(value)


def mount_point() -> str | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup``, or
    ``/sys/fs/cgroup/unified`` on a hybrid host), or ``None``."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as file:
            for line in file:
                fields = line.split()
                if " - cgroup2 " in line and len(fields) > 4 and fields[3] == "/":
                    return fields[4].replace("\\040", " ")
    except OSError:
        pass
    return None


def cgroup_of(pid: int | str = "self") -> str | None:
    """The cgroup v2 directory of process ``pid``, or ``None``."""
    mount = mount_point()
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::") and mount is not None:
            return os.path.normpath(mount + "/" + line[3:].strip().lstrip("/"))
    return None


def delegated(path: str, *, ours: bool = False) -> bool:
    """Whether systemd delegated ``path`` (``Delegate=yes``); ``ours``: it is this
    process's own cgroup, so ``$CRONCTL_CGROUP_DELEGATED=1`` says so too."""
    if ours and os.environ.get(DELEGATED_ENV) == "1":
        return True
    for name in _DELEGATE_XATTRS:
        with contextlib.suppress(OSError):
            if os.getxattr(path, name) == b"1":
                return True
    return False


def unusable(path: str, *, writer: bool = True) -> str | None:
    """Why ``path`` cannot hold attempt cgroups (one line), or ``None``; ``writer=False``
    asks only whether it is a cgroup (for whoever merely looks: ``status``)."""
    if not os.path.isfile(os.path.join(path, "cgroup.procs")):
        return f"{path} is not a cgroup v2 directory"
    procs = os.path.join(path, "cgroup.procs")
    if writer and not (os.access(path, os.W_OK) and os.access(procs, os.W_OK)):
        return f"{path} is not writable by uid {os.geteuid()}"
    return None


@dataclass(frozen=True)
class Containment:
    """What ends an attempt's processes: ``"cgroup"`` (``base`` holds the attempts'
    cgroups) or ``"process-group"``; ``reason`` says why (one line)."""

    mechanism: str
    base: str | None
    reason: str

    @property
    def cgroups(self) -> bool:
        return self.mechanism == "cgroup"

    def describe(self) -> str:
        if self.cgroups:
            return f"a cgroup per attempt under {self.base} ({self.reason})"
        return f"process group and environment tag ({self.reason})"


def detect(value: str, pid: int | None = None, *, writer: bool | None = None
           ) -> Containment:
    """What ``[scheduler] cgroup = value`` gives the scheduler ``pid`` (``None``: one
    about to start in this process's cgroup). ``writer`` (the default without ``pid``):
    this process must be able to write the cgroup; ``status`` only looks."""
    writer = pid is None if writer is None else writer
    if value == OFF:
        return Containment("process-group", None, "[scheduler] cgroup = \"off\"")
    if value != AUTO:
        problem = unusable(value, writer=writer)
        if problem is not None:
            return Containment("process-group", None, problem)
        return Containment("cgroup", value, "[scheduler] cgroup")
    own = cgroup_of("self" if pid is None else pid)
    if own is None:
        return Containment("process-group", None, "no cgroup v2 hierarchy")
    parent = os.path.dirname(own)
    if os.path.basename(own) == LEAF and unusable(parent, writer=writer) is None and (
            pid is not None or delegated(parent, ours=True)):
        # (only a scheduler with attempt cgroups beside it moves into this leaf)
        return Containment("cgroup", parent, "delegated by systemd")
    if pid is None and delegated(own, ours=True) and unusable(own) is None:
        return Containment("cgroup", own, "delegated by systemd")
    return Containment("process-group", None,
                       f"cgroup {own} is not delegated to cronctl (Delegate=yes)")


class Base:
    """The directory the attempts' cgroups are made in (:meth:`prepare` once at start)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def prepare(self) -> None:
        """Move the scheduler to the leaf when it is in the base itself (its threads and
        whatever it starts later follow) and remove the empty cgroups of earlier attempts.
        No controller is enabled: ``cgroup.kill``, ``cgroup.freeze`` and ``cpu.stat``
        need none."""
        if cgroup_of() == self.path:
            leaf = os.path.join(self.path, LEAF)
            os.makedirs(leaf, exist_ok=True)
            _write(os.path.join(leaf, "cgroup.procs"), "0")
        with contextlib.suppress(OSError):
            for name in os.listdir(self.path):
                if name.startswith(PREFIX):
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(self.path, name))  # (only when empty)

    def leftovers(self) -> list[str]:
        """The attempts' cgroups that still have processes (at start: those of a scheduler
        that was killed; systemd kills them with its unit, elsewhere nobody does)."""
        try:
            names = sorted(os.listdir(self.path))
        except OSError:
            return []
        return [os.path.join(self.path, name) for name in names if name.startswith(PREFIX)
                and Attempt(os.path.join(self.path, name), None).populated()]

    def attempt(self, tag: str) -> Attempt:
        """A new cgroup for the attempt tagged ``tag``, its ``cgroup.procs`` open for the
        child (``OSError`` when it cannot be made)."""
        path = os.path.join(self.path, PREFIX + tag)
        os.mkdir(path)
        try:
            fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            raise
        return Attempt(path, fd)


class Attempt:
    """One attempt's cgroup."""

    __slots__ = ("fd", "path", "tries")

    def __init__(self, path: str, fd: int | None) -> None:
        self.path = path
        self.fd = fd
        self.tries = 0  # removals tried while it was still populated

    def join(self) -> None:
        """In the child, before ``exec``: move this process into the cgroup."""
        assert self.fd is not None
        os.write(self.fd, b"0")

    def opened(self) -> None:
        """The child is running (or never will): the parent's fd is not needed."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in _read(os.path.join(self.path, "cgroup.procs")).split()]
        except (OSError, ValueError):
            return []

    def populated(self) -> bool:
        try:
            return "populated 1" in _read(os.path.join(self.path, "cgroup.events"))
        except OSError:
            return False

    def signal_all(self, sig: signal.Signals) -> None:
        """``sig`` to every member (a pid is checked to still be a member through its
        pidfd, so a reused pid is never signalled)."""
        for pid in self.pids():
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if cgroup_of(pid) == self.path:
                    signal.pidfd_send_signal(pidfd, sig)
            except OSError:
                pass
            finally:
                os.close(pidfd)

    def send(self, sig: signal.Signals) -> None:
        """``sig`` to every member: :meth:`kill` for SIGKILL, :meth:`signal_all` otherwise."""
        if sig == signal.SIGKILL:
            self.kill()
        else:
            self.signal_all(sig)

    def kill(self) -> None:
        """SIGKILL to every member: ``cgroup.kill`` (Linux 5.14), else freeze (nothing
        forks or exits meanwhile), SIGKILL each, thaw."""
        try:
            _write(os.path.join(self.path, "cgroup.kill"), "1")
            return
        except OSError:
            pass
        freeze = os.path.join(self.path, "cgroup.freeze")
        with contextlib.suppress(OSError):
            _write(freeze, "1")
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            _write(freeze, "0")

    def cpu_seconds(self) -> float | None:
        """User + system CPU of everything that ran in it (``cpu.stat``)."""
        try:
            for line in _read(os.path.join(self.path, "cpu.stat")).splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1_000_000
        except (OSError, ValueError):
            pass
        return None

    def settle(self, wait: float = 0.02) -> None:
        """Kill what is left and wait up to ``wait`` seconds for it to be gone (SIGKILLed
        processes die within microseconds unless they sleep uninterruptibly)."""
        if self.populated():
            self.kill()
            deadline = time.monotonic() + wait
            while self.populated() and time.monotonic() < deadline:
                time.sleep(0.0005)

    def end(self, wait: float = 0.02) -> bool:
        """:meth:`settle`, then :meth:`remove`."""
        self.settle(wait)
        return self.remove()

    def remove(self) -> bool:
        """Remove the directory: ``False`` while it is still populated (try later)."""
        self.opened()
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            return True
        except OSError:
            self.tries += 1
            return False
        return True


def _read(path: str) -> str:
    with open(path, encoding="ascii") as file:
        return file.read()


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
