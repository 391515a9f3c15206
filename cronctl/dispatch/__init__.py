"""Dispatch: how one attempt of one job runs (a child process or a Python callable).

:func:`default_dispatcher` is what ``cronctl run`` uses: it routes each job to the
:class:`CommandDispatcher` or the :class:`PythonDispatcher` by its target type, with
the interceptors installed under the ``cronctl.interceptors`` entry points.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace

from cronctl import trust
from cronctl.cgroups import Base
from cronctl.dispatch.base import (
    Dispatcher,
    DispatchRequest,
    ExecutionHandle,
    LogSink,
    Outcome,
    TargetUnresolved,
)
from cronctl.dispatch.command import CommandDispatcher
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.logbuffer import MAX_LINES_PER_EXECUTION
from cronctl.dispatch.pool import ProcessPool
from cronctl.dispatch.procenv import WORKER_INSECURE, WORKER_PATH, WORKER_PAYLOAD
from cronctl.dispatch.python import PythonDispatcher, ServiceResolver
from cronctl.dispatch.relay import Relay, Staged
from cronctl.dispatch.workerlines import WorkerSink
from cronctl.jobs.model import CommandTarget, Isolation, JobDefinition


def in_process(job: JobDefinition) -> bool:
    """Whether ``job`` runs in the scheduler's process (a Python target on its threads);
    else as a child process: a command, or a Python target with ``isolation = "process"``
    (:mod:`cronctl.dispatch.worker`)."""
    return not isinstance(job.target, CommandTarget) and job.isolation is Isolation.THREAD


def as_process(request: DispatchRequest) -> DispatchRequest:
    """The request of a process-isolated Python job, as a command: the worker, given the
    target, this process's ``sys.path`` and the job's payload."""
    job = request.job
    env = {WORKER_PATH: json.dumps([p for p in sys.path if p])}
    if trust.permitted():
        env[WORKER_INSECURE] = "1"
    if job.payload is not None:
        env[WORKER_PAYLOAD] = json.dumps(job.payload, default=str)
    argv = (sys.executable, "-I", "-m", "cronctl.dispatch.worker", str(job.target))
    return replace(request, job=replace(job, target=CommandTarget(argv=argv, env=env)))


class RoutingDispatcher:
    """Commands (and process-isolated Python jobs) to a :class:`CommandDispatcher`,
    Python targets to a :class:`PythonDispatcher`."""

    def __init__(self, commands: CommandDispatcher, python: PythonDispatcher,
                 pool: ProcessPool | None = None) -> None:
        self.commands = commands
        self.python = python
        # Process-isolated Python attempts: warm workers (without a pool, a fresh
        # ``python -m cronctl.dispatch.worker`` per attempt through the commands).
        self.pool = pool

    def resolve(self, job: JobDefinition) -> None:
        if isinstance(job.target, CommandTarget):
            self.commands.resolve(job)
        else:
            self.python.resolve(job)

    def start(
        self, request: DispatchRequest, sink: LogSink, on_done: Callable[[Outcome], None]
    ) -> ExecutionHandle:
        if isinstance(request.job.target, CommandTarget):
            return self.commands.start(request, sink, on_done)
        if not in_process(request.job):
            if self.pool is not None:
                return self.pool.start(request, sink, on_done)
            worker = WorkerSink(sink)  # the records' levels, the exception's last line
            return self.commands.start(as_process(request), worker, worker.done(on_done))
        return self.python.start(request, sink, on_done)

    @property
    def relay(self) -> Relay:
        return self.python.relay

    def stage(self, request: DispatchRequest, sink: LogSink,
              on_done: Callable[[Outcome], None], staged: Staged) -> bool:
        """Stage a fire for the relay (Python targets only: see :mod:`.relay`)."""
        if not in_process(request.job):
            return False
        return self.python.stage(request, sink, on_done, staged)

    def shutdown(self, wait: bool = True) -> None:
        """``wait=True``: wait for running attempts to finish. ``wait=False``: kill running
        commands (no child outlives the scheduler) and stop waiting for Python handlers."""
        if self.pool is not None:
            self.pool.shutdown(wait)
        self.commands.shutdown(wait)
        self.python.shutdown(wait)


def default_dispatcher(
    max_workers: int,
    *,
    interceptors: Interceptors | None = None,
    service_resolver: ServiceResolver | None = None,
    max_log_lines: int = MAX_LINES_PER_EXECUTION,
    scope: str = "",
    cgroup: str = "off",
) -> RoutingDispatcher:
    """The dispatcher ``cronctl run`` uses. ``interceptors`` defaults to those installed
    under the ``cronctl.interceptors`` entry-point group; ``max_log_lines`` (``[retention]``)
    bounds, with each job's ``output_limit``, the lines an execution keeps; ``scope``
    prefixes the commands' attempt tags (:func:`cronctl.dispatch.escapees.scope_of`);
    ``cgroup``, a directory (``cronctl run`` resolves ``[scheduler] cgroup = "auto"`` and
    prepares it: :mod:`cronctl.cgroups`), gives each command attempt a cgroup under it."""
    if interceptors is None:
        interceptors = Interceptors.load()
    commands = CommandDispatcher(interceptors=interceptors, max_lines=max_log_lines,
                                 scope=scope,
                                 cgroups=Base(cgroup) if cgroup.startswith("/") else None)
    return RoutingDispatcher(
        commands,
        PythonDispatcher(max_workers, interceptors=interceptors,
                         service_resolver=service_resolver, max_lines=max_log_lines),
        ProcessPool(max_workers, interceptors=interceptors, max_lines=max_log_lines,
                    supervisor=lambda: commands.supervisor),
    )


__all__ = [
    "CommandDispatcher",
    "DispatchRequest",
    "Dispatcher",
    "ExecutionHandle",
    "Interceptors",
    "LogSink",
    "Outcome",
    "PythonDispatcher",
    "RoutingDispatcher",
    "TargetUnresolved",
    "default_dispatcher",
]
