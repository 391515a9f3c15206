"""The child processes of command jobs as the reactor (:mod:`cronctl.dispatch.command`)
keeps them: their output streams, what the reactor tracks per child, and the small pure
pieces it uses (reaping with ``wait4``, the outcome of a stopped child)."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from cronctl import processes
from cronctl.cgroups import Attempt
from cronctl.dispatch.base import DispatchRequest, LogSink, Outcome
from cronctl.dispatch.escapees import new_tag
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.output import MAX_LINE_BYTES, OutputBudget
from cronctl.dispatch.procenv import exit_text, signal_name
from cronctl.jobs.model import CommandTarget, ExecutionStatus, ResourceUsage

log = logging.getLogger("cronctl.dispatch")


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _record_spawn(child: _Child, pid: int) -> None:
    on_spawn = child.request.on_spawn
    if on_spawn is None:
        return
    try:
        on_spawn(pid, processes.identity(pid))  # a group leader: its pid is the group id
    except Exception:
        log.exception("on_spawn callback of job %s raised", child.request.job.id)


@dataclass(eq=False)
class _Stream:
    pipe: Any  # the Popen file object; closing it closes ``fd``
    fd: int
    level: int
    partial: bytearray = field(default_factory=bytearray)


@dataclass(eq=False)
class _Child:
    request: DispatchRequest
    target: CommandTarget
    sink: LogSink
    on_done: Callable[[Outcome], None]
    interceptors: Interceptors
    budget: OutputBudget  # what of its output is kept
    ctx: Any = None
    proc: subprocess.Popen[bytes] | None = None
    streams: list[_Stream] = field(default_factory=list)
    pidfd: int | None = None
    stop_reason: str | None = None  # "cancel" | "timeout" | "shutdown"
    killed: bool = False
    kill_deadline: float | None = None
    finished: bool = False
    started_at: float = 0.0
    # In its environment (CRONCTL_ATTEMPT_TAG): how what left its group is found.
    tag: str = field(default_factory=new_tag)
    cgroup: Attempt | None = None  # its own cgroup, where one is in force (cgroups.py)


def _safe_log(sink: LogSink, level: int, message: str) -> None:
    try:
        sink.log(level, message)
    except Exception:
        log.exception("log sink raised; line dropped")


def _exited(pid: int) -> bool:
    """True when ``pid`` (our child) has exited, WITHOUT reaping it."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _reap(proc: subprocess.Popen[bytes]) -> tuple[int, ResourceUsage]:
    """Reap the exited leader with ``wait4``: its return code (``-signal`` when a signal
    ended it) and what it and its reaped descendants used."""
    try:
        _pid, status, used = os.wait4(proc.pid, 0)
    except ChildProcessError:  # reaped already (it cannot be, but never hang on it)
        returncode = proc.wait()
        return returncode, ResourceUsage(exit_code=returncode if returncode >= 0 else None,
                                         signal=signal_name(returncode))
    returncode = os.waitstatus_to_exitcode(status)
    proc.returncode = returncode  # Popen must not wait for it again
    return returncode, ResourceUsage(
        exit_code=returncode if returncode >= 0 else None,
        signal=signal_name(returncode),
        cpu_seconds=round(used.ru_utime + used.ru_stime, 6),
        max_rss_bytes=used.ru_maxrss * 1024,  # Linux reports kilobytes
    )


def _feed(child: _Child, stream: _Stream, data: bytes) -> None:
    """Whole lines of ``data`` (after what was left of the stream's last line) go to
    the sink while the head of the budget lasts, then in blocks to its tail."""
    buf = stream.partial
    buf += data
    budget, level = child.budget, stream.level
    start = 0
    while not budget.full:
        nl = buf.find(b"\n", start)
        if nl < 0 or not _emit(child, level, bytes(buf[start:nl])):
            break  # (a line the head refused goes to the tail with the rest)
        start = nl + 1
    if budget.full:
        end = buf.rfind(b"\n", start) + 1
        if end > start:
            budget.hold_block(level, bytes(memoryview(buf)[start:end]))
            start = end
    del buf[:start]
    while len(buf) >= MAX_LINE_BYTES:  # a longer line is cut into pieces
        piece = bytes(buf[:MAX_LINE_BYTES])
        del buf[:MAX_LINE_BYTES]
        if not _emit(child, level, piece):
            budget.hold_block(level, piece + b"\n")


def _emit(child: _Child, level: int, raw: bytes) -> bool:
    """Pass one line on if the head of the budget has room for it."""
    if not child.budget.head(len(raw) + 1):
        return False
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    _safe_log(child.sink, level, raw.decode("utf-8", "replace"))
    return True


def _end_cgroup(child: _Child) -> bool:
    """The leader exited: SIGKILL to everything left in the attempt's cgroup (what left
    its process group too: ``setsid``, daemons), one warning line naming those. ``False``
    when the attempt's cgroup is already gone or was never made."""
    cgroup = child.cgroup
    if cgroup is None or child.proc is None:
        return False
    leader = child.proc.pid
    outside = [pid for pid in cgroup.pids() if _group(pid) not in (leader, None)]
    if outside:
        cgroup.kill()
        _safe_log(child.sink, logging.WARNING,
                  f"ended {len(outside)} process(es) the attempt started outside its process "
                  f"group (setsid), found in its cgroup: pid {', '.join(map(str, outside))}")
    return True


def _drop_cgroup(child: _Child) -> None:
    """The child never started: its cgroup goes."""
    if child.cgroup is not None:
        child.cgroup.remove()
        child.cgroup = None


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _cgroup_usage(child: _Child, usage: ResourceUsage) -> ResourceUsage:
    """The attempt's CPU from its cgroup (everything that ran in it, reaped or not), once
    what was left in it is dead; the cgroup is removed (or kept in ``child.cgroup`` while
    a process in it has not died yet)."""
    cgroup = child.cgroup
    if cgroup is None:
        return usage
    cgroup.settle()
    cpu = cgroup.cpu_seconds()
    if cgroup.remove():
        child.cgroup = None
    if cpu is None:
        return usage
    return replace(usage, cpu_seconds=round(max(cpu, usage.cpu_seconds or 0.0), 6))


def _stop_outcome(child: _Child, returncode: int | None) -> Outcome:
    how = "" if returncode is None else "; " + exit_text(returncode)
    if child.killed and child.stop_reason != "shutdown":
        kill_timeout = child.request.job.kill_timeout.total_seconds()
        how = f"; killed with SIGKILL after {_seconds(kill_timeout)}"
    if child.stop_reason == "timeout":
        timeout = child.request.job.timeout
        if timeout is not None:
            limit = timeout.total_seconds()
        else:
            limit = time.monotonic() - child.started_at if child.started_at else 0.0
        return Outcome(ExecutionStatus.FAILED, error=f"timed out after {_seconds(limit)}; killed",
                       exit_code=returncode)
    if child.stop_reason == "shutdown":
        return Outcome(ExecutionStatus.CANCELLED, error="killed at scheduler shutdown",
                       exit_code=returncode)
    return Outcome(ExecutionStatus.CANCELLED, error="cancelled" + how, exit_code=returncode)


class _Posts(Protocol):
    def post(self, message: tuple[Any, ...]) -> None: ...


class CommandHandle:
    """Returned by :meth:`CommandDispatcher.start`; both methods only post to the reactor."""

    __slots__ = ("_child", "_reactor")

    def __init__(self, reactor: _Posts, child: _Child) -> None:
        self._reactor = reactor
        self._child = child

    def cancel(self) -> None:
        self._reactor.post(("stop", self._child, "cancel"))

    def abandon(self) -> None:
        self._reactor.post(("stop", self._child, "timeout"))

    @property
    def pid(self) -> int | None:
        proc = self._child.proc
        return None if proc is None else proc.pid
