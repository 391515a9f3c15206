"""Commands as child processes, all watched by ONE reactor thread.

Each command runs in its own process group (``start_new_session=True``), without a shell
unless the job says ``shell = true``. The reactor thread owns every child: it spawns it
(so the scheduler thread never waits for ``fork``/``exec``), reads its stdout and stderr
through one selector, sends signals, and reaps it. Doing all signalling and reaping on
one thread means a pid is never signalled after it was reaped (and possibly reused).

Exit is noticed through a pidfd (Linux ≥ 5.3) in the same selector, else by polling.

When the group leader exits, whatever else is still in its process group is killed
(``SIGKILL``) before the leader is reaped, while its pid still pins the group id: a
command never leaves orphans behind, the way systemd's ``KillMode=control-group`` treats
a service. Where cgroups are delegated, each attempt runs in a cgroup of its own and
what is in it is killed too, whatever left the group (:mod:`cronctl.cgroups`). Output
still in the pipes is read before the outcome is reported.

If the scheduler itself dies (SIGKILL, a crash), each leader gets SIGKILL from the kernel
(Linux ``PR_SET_PDEATHSIG``). Linux sends it when the *thread* that forked the child
exits, which is why only the reactor thread, which outlives every child, spawns; a child
whose parent died before the signal was armed kills itself at once. What the leader
forked lives on in its process group, which the runtime records
(``DispatchRequest.on_spawn``) so that recovery on this host can end it before the
next attempt.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cronctl.cgroups import Attempt, Base
from cronctl.dispatch import escapees
from cronctl.dispatch.base import DispatchRequest, LogSink, Outcome, TargetUnresolved
from cronctl.dispatch.children import (
    CommandHandle,
    _cgroup_usage,
    _Child,
    _drop_cgroup,
    _emit,
    _end_cgroup,
    _exited,
    _feed,
    _reap,
    _record_spawn,
    _safe_log,
    _stop_outcome,
    _Stream,
)
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.jobcontext import make_context
from cronctl.dispatch.logbuffer import MAX_LINES_PER_EXECUTION
from cronctl.dispatch.output import OutputBudget
from cronctl.dispatch.procenv import (
    command_env,
    exec_refused,
    parent_death_signal,
    spawn_error,
    unsent_kill_text,
)
from cronctl.dispatch.sandbox import SandboxError, child_setup, switch_for
from cronctl.dispatch.supervisor import Supervisor, ended_by_then
from cronctl.jobs.model import CommandTarget, ExecutionStatus, JobDefinition

log = logging.getLogger("cronctl.dispatch")

# What a command's output keeps is its job's OutputBudget (output_limit bytes and
# [retention] max_log_lines lines: the first half and the last half); everything is
# drained from the pipes at full speed whatever is kept.
_READ_CHUNK = 65536
_POLL_INTERVAL = 0.01  # only without pidfd support
# epoll/poll take milliseconds as a C int (~24.8 days at most); a longer wait (a kill
# timeout may be up to 100 years) would raise OverflowError, so wait in steps.
_MAX_WAIT = 3600.0


class _Reactor:
    """The one thread that spawns, reads, signals and reaps every child."""

    def __init__(self) -> None:
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._inbox: deque[tuple[Any, ...]] = deque()
        self._children: set[_Child] = set()
        self._timers: list[tuple[float, int, _Child | escapees.Escaped | Attempt]] = []
        self._seq = itertools.count()
        self._closing = False
        self.pidfd_missing = not hasattr(os, "pidfd_open")
        self.supervisor: Supervisor | None = None  # told of every group (see supervise)
        self.cgroups: Base | None = None  # where each attempt gets a cgroup (cgroups.py)
        self._preexec = parent_death_signal()
        self._thread = threading.Thread(target=self._run, name="cronctl-commands", daemon=True)
        self._thread.start()

    # --- called from any thread ----------------------------------------------------------

    def post(self, message: tuple[Any, ...]) -> None:
        self._inbox.append(message)
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass  # the pipe is full of wake-ups already
        except OSError:
            pass  # closed: the reactor is gone

    def shutdown(self, wait: bool, timeout: float | None = None) -> None:
        self.post(("close", wait))
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def running(self) -> int:
        return len(self._children)

    # --- the reactor thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                timeout = self._next_timeout()
                for key, _ in self._sel.select(timeout):
                    if key.data is None:
                        self._drain_wake()
                    else:
                        kind, child, stream = key.data
                        if kind == "pid":
                            self._finish(child)
                        else:
                            self._read(child, stream)
                self._process_inbox()
                self._fire_timers()
                if self.pidfd_missing:
                    self._poll_children()
                if self._closing and not self._children and not self._inbox:
                    for _, _, item in self._timers:  # nobody will fire these any more
                        if isinstance(item, escapees.Escaped):
                            escapees.signal_marked(item.pids, item.mark, signal.SIGKILL)
                        elif isinstance(item, Attempt):
                            item.end()
                    return
        except Exception:  # pragma: no cover - a bug; keep the process informative
            log.exception("command reactor crashed")
        finally:
            self._sel.close()
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _next_timeout(self) -> float | None:
        timeout: float | None = None
        if self._timers:
            timeout = min(_MAX_WAIT, max(0.0, self._timers[0][0] - time.monotonic()))
        if self.pidfd_missing and self._children:
            timeout = _POLL_INTERVAL if timeout is None else min(timeout, _POLL_INTERVAL)
        return timeout

    def _drain_wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass

    def _process_inbox(self) -> None:
        while self._inbox:
            message = self._inbox.popleft()
            if message[0] == "spawn":
                self._spawn(message[1])
            elif message[0] == "stop":
                self._stop(message[1], message[2])
            elif message[0] == "close":
                self._closing = True
                if not message[1]:
                    for child in list(self._children):
                        self._stop(child, "shutdown", immediate=True)

    def _spawn(self, child: _Child) -> None:
        if child.stop_reason is not None:  # cancelled before it ever started
            self._complete(child, _stop_outcome(child, None))
            return
        target = child.target
        if target.shell:
            argv = ["/bin/sh", "-c", target.argv[0]]
            if len(target.argv) > 1:
                argv += ["sh", *target.argv[1:]]
        else:
            argv = list(target.argv)
        child.interceptors.on_dispatch(child.ctx)
        try:  # who it runs as: resolved at every spawn, never silently ourselves
            switch = switch_for(target)
        except SandboxError as exc:
            self._complete(child, Outcome(ExecutionStatus.FAILED, error=str(exc)))
            return
        credentials: dict[str, Any] = {}
        if switch is not None and switch.groups is not None:
            credentials = {"user": switch.uid, "group": switch.gid,
                           "extra_groups": list(switch.groups)}
        env = command_env(child.request, target, None if switch is None else switch.env)
        env[escapees.TAG_ENV] = child.tag  # (after the job's env: it cannot override it)
        try:  # (made before the fork: the child joins it before exec)
            cgroup = child.cgroup = self.cgroups.attempt(child.tag) if self.cgroups else None
        except OSError as exc:
            self._complete(child, Outcome(ExecutionStatus.FAILED, retryable=True,
                                          error=f"cannot make the attempt's cgroup: {exc}"))
            return
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=target.cwd or None,
                start_new_session=True,
                close_fds=True,
                preexec_fn=child_setup(self._preexec, target.limits,
                                       None if cgroup is None else cgroup.join),
                **credentials,
            )
        except OSError as exc:
            _drop_cgroup(child)
            # Not found, not executable: a retry would find the same; a full process table
            # or too many open files (EAGAIN, EMFILE) may well pass next time.
            self._complete(child, Outcome(ExecutionStatus.FAILED,
                                          error=spawn_error(exc, argv, target),
                                          retryable=not exec_refused(exc, target)))
            return
        except Exception as exc:  # e.g. ValueError for an embedded NUL byte
            _drop_cgroup(child)
            self._complete(child, Outcome(ExecutionStatus.FAILED,
                                          error=f"cannot start command: {exc}"))
            return
        if cgroup is not None:
            cgroup.opened()
        child.proc = proc
        child.started_at = time.monotonic()
        self._children.add(child)
        _record_spawn(child, proc.pid)
        if self.supervisor is not None:
            self.supervisor.started(proc.pid)
        assert proc.stdout is not None and proc.stderr is not None
        for pipe, level in ((proc.stdout, logging.INFO), (proc.stderr, logging.WARNING)):
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            stream = _Stream(pipe, fd, level)
            child.streams.append(stream)
            self._sel.register(fd, selectors.EVENT_READ, ("out", child, stream))
        if not self.pidfd_missing:
            try:
                child.pidfd = os.pidfd_open(proc.pid)
            except OSError:
                self.pidfd_missing = True
            else:
                self._sel.register(child.pidfd, selectors.EVENT_READ, ("pid", child, None))

    def _stop(self, child: _Child, reason: str, immediate: bool = False) -> None:
        if child.finished:
            return
        if child.stop_reason is None:
            child.stop_reason = reason
        proc = child.proc
        if proc is None:  # not spawned yet: _spawn will see stop_reason
            return
        if immediate:
            self._kill(child, signal.SIGKILL)
            return
        if child.kill_deadline is not None:
            return  # already terminating
        self._kill(child, signal.SIGTERM)
        child.kill_deadline = time.monotonic() + child.request.job.kill_timeout.total_seconds()
        heapq.heappush(self._timers, (child.kill_deadline, next(self._seq), child))

    def _kill(self, child: _Child, sig: signal.Signals) -> None:
        assert child.proc is not None
        if sig == signal.SIGKILL:
            child.killed = True
        try:
            os.killpg(child.proc.pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:  # the group leader changed its group; signal it alone
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.proc.pid, sig)
        if child.cgroup is not None:  # and whatever left the group (setsid)
            child.cgroup.send(sig)

    def _fire_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, child = heapq.heappop(self._timers)
            if isinstance(child, escapees.Escaped):
                escapees.signal_marked(child.pids, child.mark, signal.SIGKILL)
            elif isinstance(child, Attempt):
                self._remove_later(child)
            elif not child.finished:
                self._kill(child, signal.SIGKILL)

    def _poll_children(self) -> None:
        for child in list(self._children):
            proc = child.proc
            if proc is not None and _exited(proc.pid):
                self._finish(child)

    def _read(self, child: _Child, stream: _Stream) -> None:
        try:
            data = os.read(stream.fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            _feed(child, stream, data)
        else:
            self._close_stream(child, stream)

    def _close_stream(self, child: _Child, stream: _Stream) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(stream.fd)
        if stream.partial:  # the last line, without its newline
            raw = bytes(stream.partial)
            if not _emit(child, stream.level, raw):
                child.budget.hold_block(stream.level, raw + b"\n")
        stream.partial.clear()
        if stream in child.streams:
            child.streams.remove(stream)
        stream.pipe.close()

    def _finish(self, child: _Child) -> None:
        """The leader exited (a zombie until reaped below): kill what is left of its group,
        read what is still in the pipes, reap, report."""
        proc = child.proc
        assert proc is not None
        # ESRCH: the group is empty; EPERM: the leader left its group.
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        for stream in list(child.streams):
            while True:
                try:
                    data = os.read(stream.fd, _READ_CHUNK)
                except BlockingIOError:
                    break
                except OSError:
                    break
                if not data:
                    break
                _feed(child, stream, data)
            self._close_stream(child, stream)
        if child.pidfd is not None:
            self._sel.unregister(child.pidfd)
            os.close(child.pidfd)
            child.pidfd = None
        for level, message in child.budget.finish():  # what was dropped, and the tail
            _safe_log(child.sink, level, message)
        self._end_escapees(child)
        if self.supervisor is not None:  # (before the reap: the zombie pins the group id)
            self.supervisor.ending(proc.pid)
        returncode, usage = _reap(proc)
        usage = _cgroup_usage(child, usage)
        if child.cgroup is not None:  # a process in it has not died yet
            self._remove_later(child.cgroup)
        self._children.discard(child)
        if child.stop_reason is not None:
            outcome = replace(_stop_outcome(child, returncode), usage=usage)
        elif returncode == 0:
            outcome = Outcome(ExecutionStatus.SUCCEEDED, exit_code=0, usage=usage)
        else:
            error = unsent_kill_text(returncode)
            supervisor = self.supervisor
            if (returncode == -signal.SIGKILL and supervisor is not None
                    and supervisor.silent_since(child.started_at)):
                error = (f"killed by SIGKILL from the supervisor: this scheduler had no "
                         f"heartbeat accepted for more than {supervisor.doubt:g}s")
            outcome = Outcome(ExecutionStatus.FAILED, error=error, exit_code=returncode,
                              usage=usage)
        self._complete(child, ended_by_then(outcome, self.supervisor, child.started_at))

    def _end_escapees(self, child: _Child) -> None:
        """What the attempt started outside its process group (``setsid``) ends with it
        (:func:`cronctl.dispatch.escapees.end_escaped`); SIGKILL on the timer heap."""
        assert child.proc is not None
        if _end_cgroup(child):
            return
        pending = escapees.end_escaped(
            child.tag, child.proc.pid, child.started_at, shutdown=child.stop_reason == "shutdown",
            warn=lambda text: _safe_log(child.sink, logging.WARNING, text))
        if pending is not None:
            deadline = time.monotonic() + child.request.job.kill_timeout.total_seconds()
            heapq.heappush(self._timers, (deadline, next(self._seq), pending))

    def _remove_later(self, cgroup: Attempt) -> None:
        """Remove an attempt's cgroup once the last process in it died (SIGKILLed: one in
        an uninterruptible sleep dies when it wakes); retried for up to a minute."""
        if cgroup.end(wait=0.0):
            return
        if cgroup.tries <= 600:
            heapq.heappush(self._timers, (time.monotonic() + 0.1, next(self._seq), cgroup))
        else:
            log.warning("cgroup %s: still has processes after a minute; left", cgroup.path)

    def _complete(self, child: _Child, outcome: Outcome) -> None:
        if child.finished:
            return
        child.finished = True
        child.interceptors.on_complete(child.ctx, outcome)
        try:
            child.on_done(outcome)
        except Exception:
            log.exception("on_done callback of job %s raised", child.request.job.id)


class CommandDispatcher:
    """Runs :class:`CommandTarget` jobs. ``start`` returns at once; the reactor thread
    spawns the process."""

    def __init__(self, *, interceptors: Interceptors | None = None,
                 max_lines: int = MAX_LINES_PER_EXECUTION, scope: str = "",
                 cgroups: Base | None = None) -> None:
        self._cgroups = cgroups  # each attempt gets a cgroup under it (cronctl/cgroups.py)
        self._interceptors = interceptors or Interceptors(())
        self._scope = scope  # of the attempts' tags (escapees.scope_of)
        self._max_lines = max_lines  # [retention] max_log_lines
        self._lock = threading.Lock()
        self._reactor: _Reactor | None = None
        self._closed = False
        self._supervisor: Supervisor | None = None

    def resolve(self, job: JobDefinition) -> None:
        if not isinstance(job.target, CommandTarget):
            raise TargetUnresolved(f"job {job.id}: not a command target")
        if not job.target.argv or not job.target.argv[0]:
            raise TargetUnresolved(f"job {job.id}: empty command")

    def start(
        self, request: DispatchRequest, sink: LogSink, on_done: Callable[[Outcome], None]
    ) -> CommandHandle:
        target = request.job.target
        assert isinstance(target, CommandTarget), "CommandDispatcher got a non-command job"
        child = _Child(request, target, sink, on_done, self._interceptors,
                       OutputBudget(request.job.output_limit, self._max_lines),
                       tag=escapees.new_tag(self._scope))
        if self._interceptors:
            child.ctx = make_context(request, sink)
        reactor = self._get_reactor()
        reactor.post(("spawn", child))
        return CommandHandle(reactor, child)

    def _get_reactor(self) -> _Reactor:
        with self._lock:
            if self._reactor is None:
                self._reactor = _Reactor()
                self._reactor.supervisor = self._supervisor
                self._reactor.cgroups = self._cgroups
            return self._reactor

    def supervise(self, limit: float, doubt: float | None = None,
                  restart: float | None = None) -> None:
        """From now on, a :class:`Supervisor` ends every command's process group when this
        node's liveness went unconfirmed for its limits (see :class:`Supervisor`), or this
        process is gone."""
        with self._lock:
            if self._supervisor is None and not self._closed:
                self._supervisor = Supervisor(limit, doubt, restart)
            if self._reactor is not None:
                self._reactor.supervisor = self._supervisor

    @property
    def supervisor(self) -> Supervisor | None:
        """The supervisor once :meth:`supervise` started it: the heartbeat tells it."""
        return self._supervisor

    @property
    def running(self) -> int:
        """Children currently alive (approximate when read from another thread)."""
        reactor = self._reactor
        return 0 if reactor is None else reactor.running

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """``wait=True``: let running commands finish (up to ``timeout``), then stop the
        reactor. ``wait=False``: SIGKILL every running command group now (each reports a
        ``cancelled`` outcome) so no child outlives the scheduler."""
        with self._lock:
            reactor, self._reactor = self._reactor, None
            supervisor, self._supervisor = self._supervisor, None
            self._closed = True  # (no supervisor starts any more; commands still may)
        if reactor is not None:
            reactor.shutdown(wait, timeout if wait else (timeout or 5.0))
        if supervisor is not None:
            supervisor.close()
