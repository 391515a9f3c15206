"""Warm worker processes for Python jobs with ``isolation = "process"`` (the default).

A worker (``python -I -m cronctl.dispatch.worker --serve``) is started ahead, in its own
process group (its own session) with the parent-death signal, and takes attempts one at
a time: a JSON line on its standard input says what to run; it answers on a pipe of its
own (the fd after ``--serve``) with the handler's ``ctx.log`` records, its progress and,
at the end, its exit code and what the attempt used, and with what the handler (or a
child of it) printed to its standard output and error (INFO and WARNING lines: the
worker reads its own file descriptors 1 and 2 and forwards their lines, all of them
before the end).
Between attempts the worker puts back its environment and working directory.

Each attempt stays killable as a command is: the supervisor of a node that cannot
confirm its liveness (docs/liveness.md) is told of the worker's process group while it
runs an attempt; a timeout or a cancel sends SIGTERM (``ctx.is_cancelled()``), then
SIGKILL to the group after ``kill_timeout``; a killed (or exited) worker is reaped and
another one started in its place. The pool keeps :data:`WARM` idle workers and grows to
``max_workers``; workers are started by one long-lived thread, so that their
parent-death signal (armed per spawning thread) fires only when the scheduler exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from cronctl import processes, trust
from cronctl.dispatch.base import DispatchRequest, LogSink, Outcome
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.jobcontext import make_context
from cronctl.dispatch.logbuffer import MAX_LINES_PER_EXECUTION
from cronctl.dispatch.output import BoundedSink, OutputBudget
from cronctl.dispatch.procenv import (
    WORKER_INSECURE,
    WORKER_PATH,
    WORKER_PAYLOAD,
    child_environ,
    command_env,
    exit_text,
    parent_death_signal,
    signal_name,
)
from cronctl.dispatch.supervisor import Supervisor, ended_by_then
from cronctl.jobs.model import CommandTarget, ExecutionStatus, ResourceUsage

log = logging.getLogger("cronctl.dispatch")

WARM = 2  # idle workers kept started


@dataclass(eq=False)
class _Attempt:
    request: DispatchRequest
    sink: BoundedSink
    on_done: Callable[[Outcome], None]
    ctx: Any = None
    stop_reason: str | None = None  # "cancel" | "timeout" | "shutdown"
    killed: bool = False
    started_at: float = 0.0
    done: bool = False


@dataclass(eq=False)
class _Worker:
    proc: subprocess.Popen[bytes]
    messages: IO[bytes]
    identity: str | None  # of its process (cronctl.processes), recorded with the attempt
    attempt: _Attempt | None = None

    @property
    def pgid(self) -> int:
        return self.proc.pid


class PoolHandle:
    __slots__ = ("_pool", "_attempt")

    def __init__(self, pool: ProcessPool, attempt: _Attempt) -> None:
        self._pool = pool
        self._attempt = attempt

    def cancel(self) -> None:
        self._pool.stop(self._attempt, "cancel")

    def abandon(self) -> None:
        self._pool.stop(self._attempt, "timeout")


class ProcessPool:
    """Runs process-isolated Python attempts on warm workers. Thread-safe."""

    def __init__(self, max_workers: int, *, interceptors: Interceptors | None = None,
                 max_lines: int = MAX_LINES_PER_EXECUTION,
                 supervisor: Callable[[], Supervisor | None] = lambda: None,
                 warm: int = WARM) -> None:
        self._max = max(1, max_workers)
        self._warm = min(warm, self._max)
        self._interceptors = interceptors or Interceptors(())
        self._max_lines = max_lines
        self._supervisor = supervisor
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._starting = 0
        self._waiting: deque[_Attempt] = deque()
        self._by_attempt: dict[int, _Worker] = {}
        self._closed = False
        self._spawns: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._keeper: threading.Thread | None = None
        self._preexec = parent_death_signal()

    # --- the scheduler's side --------------------------------------------------------

    def start(self, request: DispatchRequest, sink: LogSink,
              on_done: Callable[[Outcome], None]) -> PoolHandle:
        bounded = BoundedSink(sink, OutputBudget(request.job.output_limit, self._max_lines))
        attempt = _Attempt(request, bounded, on_done)
        if self._interceptors:
            attempt.ctx = make_context(request, bounded)
            self._interceptors.on_dispatch(attempt.ctx)
        with self._lock:
            if self._closed:
                worker = None
            else:
                self._waiting.append(attempt)
                worker = self._next_locked()
                self._grow_locked()
        if worker is None and self._closed:
            self._finish(attempt, Outcome(ExecutionStatus.CANCELLED,
                                          error="killed at scheduler shutdown"))
        elif worker is not None:
            self._assign(worker, worker.attempt)  # type: ignore[arg-type]
        return PoolHandle(self, attempt)

    def stop(self, attempt: _Attempt, reason: str) -> None:
        """SIGTERM to the attempt's worker (``ctx.is_cancelled()``), SIGKILL to its group
        after ``kill_timeout``; an attempt still waiting for a worker ends at once."""
        with self._lock:
            if attempt.done or attempt.stop_reason is not None:
                return
            attempt.stop_reason = reason
            worker = self._by_attempt.get(id(attempt))
            waiting = worker is None and attempt in self._waiting
            if waiting:
                self._waiting.remove(attempt)
        if waiting:
            self._finish(attempt, _stopped(attempt, None))
            return
        if worker is None:
            return
        _signal(worker, signal.SIGTERM, group=False)
        timer = threading.Timer(attempt.request.job.kill_timeout.total_seconds(),
                                self._kill, (worker, attempt))
        timer.daemon = True
        timer.start()

    def _kill(self, worker: _Worker, attempt: _Attempt) -> None:
        if worker.attempt is attempt and not attempt.done:
            attempt.killed = True
            _signal(worker, signal.SIGKILL, group=True)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        with self._lock:
            self._closed = True
            waiting, self._waiting = list(self._waiting), deque()
            workers = list(self._workers)
        for attempt in waiting:
            attempt.stop_reason = "shutdown"
            self._finish(attempt, _stopped(attempt, None))
        deadline = time.monotonic() + (timeout if timeout is not None else 30.0)
        for worker in workers:
            if worker.attempt is not None and wait:
                while worker.attempt is not None and time.monotonic() < deadline:
                    time.sleep(0.02)
            if worker.attempt is not None:
                worker.attempt.stop_reason = worker.attempt.stop_reason or "shutdown"
                _signal(worker, signal.SIGKILL, group=True)
            try:
                assert worker.proc.stdin is not None
                worker.proc.stdin.close()  # an idle worker exits on EOF
            except OSError:
                pass
        for worker in workers:
            try:
                worker.proc.wait(5)
            except subprocess.TimeoutExpired:
                _signal(worker, signal.SIGKILL, group=True)
        self._spawns.put(False)

    @property
    def running(self) -> int:
        return len(self._by_attempt)

    # --- workers ---------------------------------------------------------------------

    def _next_locked(self) -> _Worker | None:
        """An idle worker with the oldest waiting attempt assigned to it, if both exist."""
        while self._idle and self._waiting:
            worker = self._idle.pop()
            if worker.proc.poll() is not None:
                continue
            attempt = self._waiting.popleft()
            worker.attempt = attempt
            self._by_attempt[id(attempt)] = worker
            return worker
        return None

    def _grow_locked(self) -> None:
        need = len(self._waiting) + self._warm - len(self._idle) - self._starting
        room = self._max + self._warm - len(self._workers) - self._starting
        for _ in range(max(0, min(need, room))):
            self._starting += 1
            self._spawns.put(True)
        if self._keeper is None:
            self._keeper = threading.Thread(target=self._keep, name="cronctl-pool",
                                            daemon=True)
            self._keeper.start()

    def _keep(self) -> None:
        """The long-lived thread that starts every worker (see the module docstring)."""
        while self._spawns.get():
            worker = None
            try:
                worker = self._spawn()
            except Exception as exc:
                log.warning("cannot start a Python worker process: %s", exc)
                time.sleep(0.5)
            with self._lock:
                self._starting -= 1
                if worker is None or self._closed:
                    if worker is not None:
                        _signal(worker, signal.SIGKILL, group=True)
                    if not self._closed and self._waiting:
                        self._starting += 1
                        self._spawns.put(True)
                    continue
                self._workers.add(worker)
                self._idle.append(worker)
                ready = self._next_locked()
            if ready is not None:
                self._assign(ready, ready.attempt)  # type: ignore[arg-type]

    def _spawn(self) -> _Worker:
        read, write = os.pipe()
        env = child_environ()
        env[WORKER_PATH] = json.dumps([p for p in sys.path if p])
        if trust.permitted():  # --allow-insecure: the worker's import guard warns only
            env[WORKER_INSECURE] = "1"
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-m", "cronctl.dispatch.worker", "--serve", str(write)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=None,
                env=env, pass_fds=(write,), start_new_session=True, preexec_fn=self._preexec)
        finally:
            os.close(write)
        worker = _Worker(proc, os.fdopen(read, "rb"), processes.identity(proc.pid))
        threading.Thread(target=self._listen, args=(worker,), daemon=True,
                         name=f"cronctl-pool-{proc.pid}").start()
        return worker

    def _assign(self, worker: _Worker, attempt: _Attempt) -> None:
        request = attempt.request
        job = request.job
        attempt.started_at = time.monotonic()
        if request.on_spawn is not None:
            try:
                request.on_spawn(worker.pgid, worker.identity)
            except Exception:
                log.exception("on_spawn callback of job %s raised", job.id)
        supervisor = self._supervisor()
        if supervisor is not None:
            supervisor.started(worker.pgid)
        env = command_env(request, CommandTarget(argv=("python",)))
        message = {"target": str(job.target), "env": env,
                   "payload": None if job.payload is None else
                   json.loads(json.dumps(job.payload, default=str))}
        try:
            assert worker.proc.stdin is not None
            worker.proc.stdin.write(json.dumps(message).encode() + b"\n")
            worker.proc.stdin.flush()
        except OSError:  # it died meanwhile: its listener ends the attempt
            pass

    def _listen(self, worker: _Worker) -> None:
        """The worker's messages; at EOF (it exited or was killed) its attempt ends."""
        for line in worker.messages:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            attempt = worker.attempt
            if attempt is None:
                continue
            if "out" in message:
                attempt.sink.log(int(message["out"]), str(message["m"]))
            elif "log" in message:
                attempt.sink.log(int(message["log"]), str(message["m"]))
            elif "progress" in message:
                done, total, text = message["progress"]
                attempt.sink.progress(done, total, text)
            elif "code" in message:  # (its output came before: the worker drained it)
                usage = ResourceUsage(exit_code=int(message["code"]),
                                      cpu_seconds=message.get("cpu"),
                                      max_rss_bytes=message.get("rss"))
                error = message.get("error")
                self._release(worker, attempt, int(message["code"]), usage,
                              str(error) if error else None)
        worker.messages.close()
        self._died(worker)

    def _release(self, worker: _Worker, attempt: _Attempt, code: int,
                 usage: ResourceUsage, error: str | None = None) -> None:
        """The attempt's end; ``error``: the exception's last line (``ValueError: boom``),
        which says more than ``exit code 1``."""
        supervisor = self._supervisor()
        if supervisor is not None:
            supervisor.ending(worker.pgid)
        with self._lock:
            worker.attempt = None
            self._by_attempt.pop(id(attempt), None)
            if not self._closed:
                self._idle.append(worker)
            ready = self._next_locked()
        if attempt.stop_reason is not None:
            outcome = _stopped(attempt, code)
        elif code == 0:
            outcome = Outcome(ExecutionStatus.SUCCEEDED, exit_code=0, usage=usage)
        else:
            outcome = Outcome(ExecutionStatus.FAILED, error=error or exit_text(code),
                              exit_code=code, usage=usage)
        self._finish(attempt, ended_by_then(outcome, supervisor, attempt.started_at))
        if ready is not None:
            self._assign(ready, ready.attempt)  # type: ignore[arg-type]

    def _died(self, worker: _Worker) -> None:
        attempt = worker.attempt
        supervisor = self._supervisor()
        if attempt is not None and supervisor is not None:
            supervisor.ending(worker.pgid)  # (before the reap: the zombie pins the group)
        returncode = worker.proc.wait()
        if worker.proc.stdin is not None:
            with contextlib.suppress(OSError):
                worker.proc.stdin.close()
        with self._lock:
            self._workers.discard(worker)
            if worker in self._idle:
                self._idle.remove(worker)
            worker.attempt = None
            if attempt is not None:
                self._by_attempt.pop(id(attempt), None)
            if not self._closed:
                self._grow_locked()
        if attempt is None:
            return
        usage = ResourceUsage(exit_code=returncode if returncode >= 0 else None,
                              signal=signal_name(returncode))
        if attempt.stop_reason is not None:
            outcome = _stopped(attempt, returncode)
        elif (returncode == -signal.SIGKILL and supervisor is not None
              and supervisor.silent_since(attempt.started_at)):
            outcome = Outcome(ExecutionStatus.FAILED, exit_code=returncode, usage=usage,
                              error="killed by SIGKILL from the supervisor: this scheduler "
                                    "had no heartbeat accepted for more than "
                                    f"{supervisor.doubt:g}s")
        elif returncode == 0:
            outcome = Outcome(ExecutionStatus.SUCCEEDED, exit_code=0, usage=usage)
        else:
            outcome = Outcome(ExecutionStatus.FAILED, error=exit_text(returncode),
                              exit_code=returncode if returncode >= 0 else None, usage=usage)
        self._finish(attempt, ended_by_then(outcome, supervisor, attempt.started_at))

    def _finish(self, attempt: _Attempt, outcome: Outcome) -> None:
        if attempt.done:
            return
        attempt.done = True
        attempt.sink.close()
        if self._interceptors:
            self._interceptors.on_complete(attempt.ctx, outcome)
        try:
            attempt.on_done(outcome)
        except Exception:
            log.exception("on_done of job %s raised", attempt.request.job.id)


def _stopped(attempt: _Attempt, code: int | None) -> Outcome:
    how = "" if code is None else "; " + exit_text(code)
    if attempt.killed and attempt.stop_reason != "shutdown":
        how = f"; killed with SIGKILL after {attempt.request.job.kill_timeout.total_seconds():g}s"
    if attempt.stop_reason == "timeout":
        timeout = attempt.request.job.timeout
        limit = timeout.total_seconds() if timeout is not None else (
            time.monotonic() - attempt.started_at)
        return Outcome(ExecutionStatus.FAILED, error=f"timed out after {limit:g}s; killed",
                       exit_code=code)
    if attempt.stop_reason == "shutdown":
        return Outcome(ExecutionStatus.CANCELLED, error="killed at scheduler shutdown",
                       exit_code=code)
    return Outcome(ExecutionStatus.CANCELLED, error="cancelled" + how, exit_code=code)


def _signal(worker: _Worker, sig: signal.Signals, *, group: bool) -> None:
    try:
        if group:
            os.killpg(worker.pgid, sig)
        else:
            os.kill(worker.proc.pid, sig)
    except OSError:
        pass


__all__ = ["PoolHandle", "ProcessPool", "WORKER_PAYLOAD"]
