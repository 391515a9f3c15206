"""Python targets: ``service:`` operations and ``python:module:function`` callables.

Both are resolved on EVERY fire: ``service:`` through the service registry (so a registry
that changed is seen at the next fire), ``python:`` through :func:`importlib.import_module`
(cheap once imported; a module whose import failed is not in ``sys.modules`` and is
imported again, with the finder caches invalidated, at the next fire).

Sync handlers run in a bounded thread pool (:class:`~cronctl.dispatch.workers.WorkerPool`,
a futures-free ``ThreadPoolExecutor``); ``async def`` handlers are awaited on one shared
event-loop thread. How a callable is called (with a :class:`~cronctl.context.JobContext`
or without, sync or async) is decided once per function from its signature and cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import logging
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from cronctl.context import JobContext
from cronctl.dispatch.base import DispatchRequest, LogSink, Outcome, TargetUnresolved
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.jobcontext import make_context
from cronctl.dispatch.logbuffer import MAX_LINES_PER_EXECUTION
from cronctl.dispatch.output import BoundedSink, OutputBudget
from cronctl.dispatch.relay import Relay, Staged
from cronctl.dispatch.workers import CancelFlag, WorkerPool
from cronctl.jobs.model import ExecutionStatus, JobDefinition, PythonTarget, ServiceTarget

log = logging.getLogger("cronctl.dispatch")

ServiceResolver = Callable[[str], Callable[..., Any]]
_SUCCEEDED = Outcome(ExecutionStatus.SUCCEEDED)  # frozen: one for every success


def default_service_resolver(op_id: str) -> Callable[..., Any]:
    from cronctl.jobs.registry import resolve_operation

    return resolve_operation(op_id)


@dataclass(frozen=True)
class _CallShape:
    takes_context: bool
    is_async: bool


class HandlerSignatureError(TypeError):
    pass


def shape_of(fn: Callable[..., Any]) -> _CallShape:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: call with nothing
        return _CallShape(False, inspect.iscoroutinefunction(fn))
    required = [
        p for p in sig.parameters.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(required) > 1:
        raise HandlerSignatureError(
            f"handler takes {len(required)} required arguments; it must take none or one "
            "(a JobContext)"
        )
    kw_required = [p.name for p in sig.parameters.values()
                   if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if kw_required:
        raise HandlerSignatureError(
            f"handler has required keyword-only arguments ({', '.join(kw_required)}); it must "
            "take none or one positional JobContext"
        )
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an async __call__ on an instance
    )
    return _CallShape(bool(required), is_async)


def error_text(exc: BaseException) -> str:
    """``"ExcType: message"`` (just the type when the message is empty)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _delivered(_outcome: Outcome) -> None:
    """An execution's callback once its outcome was delivered (never called: see finish)."""


class _Execution:
    """One running attempt; ``finish`` delivers exactly one outcome."""

    __slots__ = ("ctx", "request", "sink", "_on_done", "_lock", "done", "_interceptors",
                 "abandoned")

    def __init__(self, request: DispatchRequest, sink: LogSink, ctx: JobContext,
                 on_done: Callable[[Outcome], None], interceptors: Interceptors) -> None:
        self.request = request
        self.sink = sink
        self.ctx = ctx
        self._on_done = on_done
        self._lock = threading.Lock()
        self._interceptors = interceptors
        self.done = False
        self.abandoned = False

    def cancel(self) -> None:
        self.ctx._cancel_event.set()

    def abandon(self) -> None:
        timeout = self.request.job.timeout
        what = f"timed out after {timeout.total_seconds():g}s" if timeout else "abandoned"
        with self._lock:
            if self.done:
                return
            self.abandoned = True
        self.finish(Outcome(ExecutionStatus.ABANDONED,
                            error=f"{what}; the handler was left running"), force=True)

    def finish(self, outcome: Outcome, *, force: bool = False) -> bool:
        """Deliver ``outcome``; False when one was delivered already (or is abandoned)."""
        with self._lock:
            if self.done or (self.abandoned and not force):
                return False
            self.done = True
        close = getattr(self.sink, "close", None)
        if close is not None:  # the count of what was dropped, and the tail
            try:
                close()
            except Exception:
                log.exception("log sink raised; the end of the output was lost")
        if self._interceptors:
            self._interceptors.on_complete(self.ctx, outcome)
        # Delivered once: the callback is dropped with it. A relayed attempt's callback
        # holds its Staged, which holds this execution: kept, the pair was a reference
        # cycle per fire that only the cyclic collector freed (a full collection of ~80,000
        # such objects every few seconds stalled 1,000 every-second fires by up to 85 ms).
        on_done, self._on_done = self._on_done, _delivered
        try:
            on_done(outcome)
        except Exception:
            log.exception("on_done callback of job %s raised", self.request.job.id)
        return True

    def result(self, exc: BaseException | None, tb_skip: int = 1) -> bool:
        """Turn how the handler ended into the outcome (False: it was delivered already)."""
        if exc is None:
            if self.ctx.is_cancelled():
                return self.finish(Outcome(ExecutionStatus.CANCELLED, error="cancelled"))
            return self.finish(_SUCCEEDED)
        if self.ctx.is_cancelled() and isinstance(exc, asyncio.CancelledError):
            return self.finish(Outcome(ExecutionStatus.CANCELLED, error="cancelled"))
        tb = exc.__traceback__
        for _ in range(tb_skip):  # drop the dispatcher's own frames
            if tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
        text = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()
        try:
            self.sink.log(logging.ERROR, f"handler raised {error_text(exc)}\n{text}")
        except Exception:
            log.exception("log sink raised; traceback dropped")
        status = ExecutionStatus.CANCELLED if self.ctx.is_cancelled() else ExecutionStatus.FAILED
        return self.finish(Outcome(status, error=error_text(exc)))


class PythonHandle:
    __slots__ = ("_execution",)

    def __init__(self, execution: _Execution) -> None:
        self._execution = execution

    def cancel(self) -> None:
        self._execution.cancel()

    def abandon(self) -> None:
        self._execution.abandon()


class PythonDispatcher:
    """Runs :class:`ServiceTarget` and :class:`PythonTarget` jobs.

    ``max_workers`` bounds the sync thread pool (the runtime's ``max_concurrent_jobs``
    already bounds how many attempts run, so fires never queue here for long)."""

    def __init__(
        self,
        max_workers: int = 10,
        *,
        service_resolver: ServiceResolver | None = None,
        interceptors: Interceptors | None = None,
        max_lines: int = MAX_LINES_PER_EXECUTION,
    ) -> None:
        self._pool = WorkerPool(max(1, max_workers), name="cronctl-job")
        self._max_lines = max_lines  # [retention] max_log_lines
        self._resolve_service = service_resolver or default_service_resolver
        self._interceptors = interceptors or Interceptors(())
        self._shapes: dict[Any, _CallShape] = {}
        # What the runtime's resolve() just found, taken by the start() that follows it,
        # so a fire resolves its target once (job id -> (target, callable)).
        self._resolved: dict[str, tuple[object, Callable[..., Any]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()
        self.relay = Relay()

    # --- resolution ----------------------------------------------------------------------

    def resolve(self, job: JobDefinition) -> None:
        self._resolved[job.id] = (job.target, self._callable(job))

    def _callable(self, job: JobDefinition) -> Callable[..., Any]:
        target = job.target
        if isinstance(target, ServiceTarget):
            try:
                fn = self._resolve_service(target.operation_id)
            except Exception as exc:
                raise TargetUnresolved(f"{target}: {exc}") from exc
        elif isinstance(target, PythonTarget):
            fn = import_target(target)
        else:
            raise TargetUnresolved(f"job {job.id}: {target} is not a Python target")
        if not callable(fn):
            raise TargetUnresolved(f"{target}: {type(fn).__name__} object is not callable")
        return fn

    def _shape(self, fn: Callable[..., Any]) -> _CallShape:
        key = getattr(fn, "__func__", fn)
        try:
            return self._shapes[key]
        except (KeyError, TypeError):
            pass
        shape = shape_of(fn)
        with contextlib.suppress(TypeError):  # an unhashable callable object
            self._shapes[key] = shape
        return shape

    # --- running -------------------------------------------------------------------------

    def start(
        self, request: DispatchRequest, sink: LogSink, on_done: Callable[[Outcome], None]
    ) -> PythonHandle:
        sink = self._bounded(request, sink)
        ctx = make_context(request, sink, CancelFlag())
        execution = _Execution(request, sink, ctx, on_done, self._interceptors)
        handle = PythonHandle(execution)
        job = request.job
        try:
            cached = self._resolved.pop(job.id, None)
            fn = cached[1] if cached is not None and cached[0] == job.target else (
                self._callable(job))
            shape = self._shape(fn)
        except (TargetUnresolved, HandlerSignatureError) as exc:
            _log_to(sink, logging.ERROR, str(exc))
            execution.finish(Outcome(ExecutionStatus.FAILED, error=str(exc)))
            return handle
        try:
            if shape.is_async:
                self._submit_async(execution, fn, shape)
            else:
                # A worker from now on, not from when the pool's thread gets to it: the
                # scheduler thread gives way to workers about to take staged fires.
                self.relay.enter()
                try:
                    self._pool.submit(self._run_sync, execution, fn, shape.takes_context)
                except BaseException:
                    self.relay.leave()
                    raise
        except RuntimeError as exc:  # the pool or loop is shut down
            execution.finish(Outcome(ExecutionStatus.FAILED, error=f"not started: {exc}"))
        return handle

    def _bounded(self, request: DispatchRequest, sink: LogSink) -> BoundedSink:
        """The attempt's log lines through its output budget
        (docs/behaviour.md#sandbox-and-output)."""
        return BoundedSink(sink, OutputBudget(request.job.output_limit, self._max_lines))

    def stage(self, request: DispatchRequest, sink: LogSink,
              on_done: Callable[[Outcome], None], staged: Staged) -> bool:
        """Make ``staged`` runnable by :attr:`relay` (a worker whose attempt ended runs it):
        False when it cannot be (an ``async def`` handler, a target that does not resolve
        now: the fire then starts the ordinary way when the core admits it)."""
        try:
            fn = self._callable(request.job)
            shape = self._shape(fn)
        except Exception:
            return False
        if shape.is_async:
            return False
        sink = self._bounded(request, sink)
        execution = _Execution(request, sink, make_context(request, sink, CancelFlag()),
                               on_done, self._interceptors)
        staged.handle = PythonHandle(execution)
        staged.run = (execution, fn, shape.takes_context)
        return True

    def _run_sync(self, execution: _Execution, fn: Callable[..., Any], takes_ctx: bool) -> None:
        # The slot this attempt held goes to the oldest staged fire, in this thread, once
        # its outcome is posted (an attempt abandoned at its timeout gave it back then).
        relay = self.relay  # (counted in relay.running since start() submitted it)
        take = relay.take
        try:
            while self._run_one(execution, fn, takes_ctx):
                nxt = take()
                if nxt is None:
                    return
                execution, fn, takes_ctx = nxt.run
        finally:
            relay.leave()

    def _run_one(self, execution: _Execution, fn: Callable[..., Any], takes_ctx: bool) -> bool:
        """Run one attempt; True when this thread delivered its outcome."""
        if execution.done:  # abandoned while it waited for a worker
            return False
        if self._interceptors:
            self._interceptors.on_dispatch(execution.ctx)
        try:
            result = fn(execution.ctx) if takes_ctx else fn()
        except BaseException as exc:  # a handler's sys.exit() must not kill the worker
            return execution.result(exc)
        if inspect.isawaitable(result):  # a sync wrapper around a coroutine
            self._await(execution, result)
            return False
        return execution.result(None)

    def _submit_async(self, execution: _Execution, fn: Callable[..., Any],
                      shape: _CallShape) -> None:
        ctx = execution.ctx
        interceptors = self._interceptors

        async def run() -> Any:
            if interceptors:
                interceptors.on_dispatch(ctx)
            return await (fn(ctx) if shape.takes_context else fn())

        self._await(execution, run(), tb_skip=2)

    def _await(self, execution: _Execution, awaitable: Awaitable[Any], tb_skip: int = 1) -> None:
        async def wrap() -> Any:
            return await awaitable

        coro: Coroutine[Any, Any, Any] = (
            awaitable if inspect.iscoroutine(awaitable) else wrap()
        )
        future = asyncio.run_coroutine_threadsafe(coro, self._event_loop())

        def done(f: Future[Any]) -> None:
            if f.cancelled():
                execution.result(asyncio.CancelledError())
                return
            execution.result(f.exception(), tb_skip=tb_skip)

        future.add_done_callback(done)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=run, name="cronctl-async", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._loop_thread = loop, thread
            return self._loop

    def shutdown(self, wait: bool = True) -> None:
        """Stop accepting work. ``wait=True`` waits for running sync handlers; with
        ``wait=False`` handlers still queued never start (their outcome: cancelled). Async
        handlers still running are cancelled either way."""
        self.relay.revoke()  # (staged fires belong to the runtime: it never started them)
        for _fn, args in self._pool.shutdown(wait=wait):
            execution = args[0]
            if isinstance(execution, _Execution):
                self.relay.leave()  # (a submitted worker that never ran)
                execution.finish(Outcome(ExecutionStatus.CANCELLED,
                                         error="scheduler shut down before it started"))
        with self._loop_lock:
            loop, thread = self._loop, self._loop_thread
            self._loop = self._loop_thread = None
        if loop is not None and thread is not None:
            def stop() -> None:
                tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in tasks:
                    task.cancel()
                loop.call_soon(loop.stop)

            loop.call_soon_threadsafe(stop)
            thread.join(5.0)
            if not thread.is_alive():
                loop.close()


def import_target(target: PythonTarget) -> Callable[..., Any]:
    module = sys.modules.get(target.module)
    if module is None:
        try:
            module = importlib.import_module(target.module)
        except ModuleNotFoundError:
            # A module that appeared since the last attempt: the path finders cache
            # directory listings, so forget them and look once more.
            importlib.invalidate_caches()
            try:
                module = importlib.import_module(target.module)
            except Exception as exc:
                raise TargetUnresolved(f"{target}: cannot import {target.module}: "
                                       f"{error_text(exc)}") from exc
        except BaseException as exc:  # anything the module's import runs can fail
            if not isinstance(exc, Exception | SystemExit):
                raise
            raise TargetUnresolved(f"{target}: cannot import {target.module}: "
                                   f"{error_text(exc)}") from exc
    obj: Any = module
    for part in target.function.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise TargetUnresolved(
                f"{target}: {target.module} has no attribute {target.function}"
            ) from exc
    if not callable(obj):
        raise TargetUnresolved(f"{target}: {type(obj).__name__} object is not callable")
    return obj  # type: ignore[no-any-return]


def _log_to(sink: LogSink, level: int, message: str) -> None:
    try:
        sink.log(level, message)
    except Exception:
        log.exception("log sink raised; line dropped")
