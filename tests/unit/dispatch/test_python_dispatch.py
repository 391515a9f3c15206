"""PythonDispatcher: sync and async handlers, with and without a JobContext, outcomes,
cancel, abandon, per-fire resolution of service: and python: targets."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cronctl.context import JobContext
from cronctl.dispatch.base import Outcome, TargetUnresolved
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.python import PythonDispatcher
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import (
    ExecutionStatus,
    JobDefinition,
    Origin,
    PythonTarget,
    ServiceTarget,
)

Registry = dict[str, Callable[..., Any]]


@pytest.fixture
def registry() -> Registry:
    return {}


@pytest.fixture
def dispatcher(registry: Registry) -> Iterator[PythonDispatcher]:
    def resolve(op_id: str) -> Callable[..., Any]:
        try:
            return registry[op_id]
        except KeyError:
            raise LookupError(f"no operation {op_id}") from None

    d = PythonDispatcher(4, service_resolver=resolve)
    yield d
    d.shutdown(wait=False)


def service_job(op: str = "ns.svc.op", **kw: Any) -> JobDefinition:
    return JobDefinition(id="py-job", target=ServiceTarget(op), cron="* * * * * *", **kw)


def blocking(registry: Registry) -> tuple[threading.Event, threading.Event]:
    """``ns.svc.block``: sets ``started``, then waits (up to 5 s) for ``release``."""
    started, release = threading.Event(), threading.Event()

    def block() -> None:
        started.set()
        release.wait(5)

    registry["ns.svc.block"] = block
    return started, release


def run(dispatcher: PythonDispatcher, definition: JobDefinition,
        **kw: Any) -> tuple[RecordingSink, OutcomeRecorder]:
    sink, done = RecordingSink(), OutcomeRecorder()
    dispatcher.start(request_for(definition, **kw), sink, done)
    done.wait(5)
    return sink, done


def test_sync_handler_without_context(dispatcher: PythonDispatcher, registry: Registry) -> None:
    calls: list[str] = []
    registry["ns.svc.op"] = lambda: calls.append(threading.current_thread().name)
    _, done = run(dispatcher, service_job())
    assert done.outcomes == [Outcome(ExecutionStatus.SUCCEEDED)]
    assert calls[0].startswith("cronctl-job")


def test_sync_handler_gets_a_full_context(dispatcher: PythonDispatcher,
                                          registry: Registry) -> None:
    seen: list[JobContext] = []
    registry["ns.svc.op"] = seen.append
    scheduled = datetime(2026, 5, 1, 12, tzinfo=UTC)
    definition = service_job(parameters={"days": 30}, payload=["x"])
    _, done = run(dispatcher, definition, execution_id=9, scheduled_at=scheduled, attempt=2,
                  origin=Origin.REPLAY, fencing_token=5, occurrence_id="occ-1")
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    ctx = seen[0]
    assert (ctx.job_id, ctx.execution_id, ctx.occurrence_id, ctx.scheduled_at, ctx.attempt,
            ctx.origin, ctx.fencing_token) == ("py-job", 9, "occ-1", scheduled, 2, "replay", 5)
    assert ctx.parameters == {"days": 30}
    assert ctx.payload == ["x"]
    assert not ctx.is_cancelled()


def test_async_handlers_with_and_without_context(dispatcher: PythonDispatcher,
                                                 registry: Registry) -> None:
    seen: list[object] = []

    async def no_ctx() -> None:
        seen.append("no ctx")

    async def with_ctx(ctx: JobContext) -> None:
        seen.append(ctx.job_id)

    registry["ns.svc.a"] = no_ctx
    registry["ns.svc.b"] = with_ctx
    for op in ("ns.svc.a", "ns.svc.b"):
        _, done = run(dispatcher, service_job(op))
        assert done.wait().status is ExecutionStatus.SUCCEEDED
    assert seen == ["no ctx", "py-job"]


def test_exception_fails_with_type_and_message_and_logs_the_traceback(
    dispatcher: PythonDispatcher, registry: Registry,
) -> None:
    def broken_handler() -> None:
        raise ValueError("boom")

    registry["ns.svc.op"] = broken_handler
    sink, done = run(dispatcher, service_job())
    assert done.wait() == Outcome(ExecutionStatus.FAILED, error="ValueError: boom")
    (level, text), = sink.lines
    assert level == logging.ERROR
    assert "Traceback" in text and "broken_handler" in text and "ValueError: boom" in text
    assert "_run_sync" not in text  # the dispatcher's own frame is left out


def test_async_exception_fails(dispatcher: PythonDispatcher, registry: Registry) -> None:
    async def broken_async(ctx: JobContext) -> None:
        raise KeyError("k")

    registry["ns.svc.op"] = broken_async
    sink, done = run(dispatcher, service_job())
    assert done.wait() == Outcome(ExecutionStatus.FAILED, error="KeyError: 'k'")
    assert "broken_async" in sink.messages[0]


def test_system_exit_in_a_handler_is_a_failure(dispatcher: PythonDispatcher,
                                               registry: Registry) -> None:
    def exits() -> None:
        raise SystemExit(4)

    registry["ns.svc.op"] = exits
    _, done = run(dispatcher, service_job())
    assert done.wait() == Outcome(ExecutionStatus.FAILED, error="SystemExit: 4")


def test_cancel_is_seen_by_is_cancelled(dispatcher: PythonDispatcher,
                                        registry: Registry) -> None:
    started = threading.Event()

    def cooperative(ctx: JobContext) -> None:
        started.set()
        deadline = time.monotonic() + 5
        while not ctx.is_cancelled() and time.monotonic() < deadline:
            time.sleep(0.005)

    registry["ns.svc.op"] = cooperative
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(service_job()), sink, done)
    assert started.wait(5)
    handle.cancel()
    assert done.wait() == Outcome(ExecutionStatus.CANCELLED, error="cancelled")


def test_async_cancel(dispatcher: PythonDispatcher, registry: Registry) -> None:
    import asyncio

    started = threading.Event()

    async def cooperative(ctx: JobContext) -> None:
        started.set()
        while not ctx.is_cancelled():
            await asyncio.sleep(0.005)

    registry["ns.svc.op"] = cooperative
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(service_job()), sink, done)
    assert started.wait(5)
    handle.cancel()
    assert done.wait().status is ExecutionStatus.CANCELLED


def test_abandon_reports_once_and_ignores_the_late_result(dispatcher: PythonDispatcher,
                                                          registry: Registry) -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def stuck() -> None:
        started.set()
        release.wait(5)
        finished.set()

    registry["ns.svc.op"] = stuck
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(service_job(timeout=timedelta(seconds=2))), sink,
                              done)
    assert started.wait(5)
    handle.abandon()
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.ABANDONED
    assert outcome.error == "timed out after 2s; the handler was left running"
    handle.abandon()
    release.set()
    assert finished.wait(5)
    time.sleep(0.05)  # give a (wrong) second on_done the chance to show up
    assert len(done.outcomes) == 1


def test_abandoned_before_a_worker_took_it_never_runs(registry: Registry) -> None:
    dispatcher = PythonDispatcher(1, service_resolver=registry.__getitem__)
    release, ran = threading.Event(), []
    registry["ns.svc.block"] = lambda: release.wait(5)
    registry["ns.svc.op"] = lambda: ran.append(1)
    first, second = OutcomeRecorder(), OutcomeRecorder()
    dispatcher.start(request_for(service_job("ns.svc.block")), RecordingSink(), first)
    handle = dispatcher.start(request_for(service_job()), RecordingSink(), second)
    handle.abandon()  # still queued behind the blocked one
    assert second.wait().status is ExecutionStatus.ABANDONED
    release.set()
    assert first.wait().status is ExecutionStatus.SUCCEEDED
    dispatcher.shutdown(wait=True)
    assert ran == [] and len(second.outcomes) == 1


def test_shutdown_without_wait_cancels_queued_handlers(registry: Registry) -> None:
    dispatcher = PythonDispatcher(1, service_resolver=registry.__getitem__)
    started, release = blocking(registry)
    registry["ns.svc.op"] = lambda: None
    first, queued = OutcomeRecorder(), OutcomeRecorder()
    dispatcher.start(request_for(service_job("ns.svc.block")), RecordingSink(), first)
    dispatcher.start(request_for(service_job()), RecordingSink(), queued)
    assert started.wait(5)
    dispatcher.shutdown(wait=False)
    assert queued.wait() == Outcome(ExecutionStatus.CANCELLED,
                                    error="scheduler shut down before it started")
    release.set()
    assert first.wait().status is ExecutionStatus.SUCCEEDED


def test_resolution_happens_once_per_fire(registry: Registry) -> None:
    lookups: list[str] = []

    def resolve(op_id: str) -> Callable[..., Any]:
        lookups.append(op_id)
        return registry[op_id]

    registry["ns.svc.op"] = lambda: None
    dispatcher = PythonDispatcher(1, service_resolver=resolve)
    definition = service_job()
    dispatcher.resolve(definition)  # what the runtime does before start()
    done = OutcomeRecorder()
    dispatcher.start(request_for(definition), RecordingSink(), done)
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    done2 = OutcomeRecorder()
    dispatcher.start(request_for(definition), RecordingSink(), done2)  # no resolve() first
    assert done2.wait().status is ExecutionStatus.SUCCEEDED
    assert lookups == ["ns.svc.op", "ns.svc.op"]
    dispatcher.shutdown()


def test_service_target_is_resolved_on_every_fire(dispatcher: PythonDispatcher,
                                                  registry: Registry) -> None:
    calls: list[str] = []
    registry["ns.svc.op"] = lambda: calls.append("v1")
    run(dispatcher, service_job())
    registry["ns.svc.op"] = lambda: calls.append("v2")
    run(dispatcher, service_job())
    del registry["ns.svc.op"]
    with pytest.raises(TargetUnresolved, match="no operation ns.svc.op"):
        dispatcher.resolve(service_job())
    _, done = run(dispatcher, service_job())  # start after resolution broke: failed, no raise
    assert done.wait().status is ExecutionStatus.FAILED
    assert calls == ["v1", "v2"]


def test_python_target_resolution(dispatcher: PythonDispatcher,
                                  make_module: Callable[..., str]) -> None:
    name = make_module("VALUE = 1\ndef handler(ctx):\n    ctx.log.info('ran %s', VALUE)\n")
    definition = JobDefinition(id="p", target=PythonTarget(name, "handler"), cron="* * * * *")
    dispatcher.resolve(definition)
    sink, done = run(dispatcher, definition)
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    assert sink.lines == [(logging.INFO, "ran 1")]
    for target, message in [
        (PythonTarget(name, "missing"), "has no attribute missing"),
        (PythonTarget(name, "VALUE"), "int object is not callable"),
        (PythonTarget("cronctl_no_such_module_xyz", "f"), "cannot import"),
    ]:
        with pytest.raises(TargetUnresolved, match=message):
            dispatcher.resolve(JobDefinition(id="p", target=target, cron="* * * * *"))


def test_a_module_that_failed_is_imported_again(dispatcher: PythonDispatcher,
                                                make_module: Callable[..., str],
                                                tmp_path: Path) -> None:
    name = make_module("raise RuntimeError('not yet')\n")
    definition = JobDefinition(id="p", target=PythonTarget(name, "f"), cron="* * * * *")
    with pytest.raises(TargetUnresolved, match="RuntimeError: not yet"):
        dispatcher.resolve(definition)
    (tmp_path / f"{name}.py").write_text("def f():\n    return None\n")
    dispatcher.resolve(definition)
    # A module that did not exist at the first fire is found once it does.
    later = JobDefinition(id="q", target=PythonTarget(f"{name}_later", "f"), cron="* * * * *")
    with pytest.raises(TargetUnresolved):
        dispatcher.resolve(later)
    make_module("def f():\n    return None\n", name=f"{name}_later")
    dispatcher.resolve(later)


def test_log_and_progress_reach_the_sink(dispatcher: PythonDispatcher,
                                         registry: Registry) -> None:
    def handler(ctx: JobContext) -> None:
        ctx.log.debug("debug line")
        ctx.log.warning("warn %d", 2)
        ctx.progress(1, 10)
        ctx.progress(5, 10, "half")
        try:
            raise OSError("disk")
        except OSError:
            ctx.log.exception("caught")

    registry["ns.svc.op"] = handler
    sink, done = run(dispatcher, service_job())
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    assert sink.lines[:2] == [(logging.DEBUG, "debug line"), (logging.WARNING, "warn 2")]
    assert sink.lines[2][0] == logging.ERROR and "OSError: disk" in sink.lines[2][1]
    assert sink.progress_calls == [(1, 10, None), (5, 10, "half")]
    # The per-execution logger is not registered anywhere: nothing leaks.
    assert not any(name.startswith("cronctl.job.py-job")
                   for name in logging.Logger.manager.loggerDict)


def test_handler_with_too_many_arguments_fails(dispatcher: PythonDispatcher,
                                               registry: Registry) -> None:
    registry["ns.svc.op"] = lambda a, b: None
    _, done = run(dispatcher, service_job())
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.FAILED
    assert "must take none or one" in (outcome.error or "")


def test_sync_pool_is_bounded(registry: Registry) -> None:
    dispatcher = PythonDispatcher(2, service_resolver=registry.__getitem__)
    running, peak, changed = [0], [0], threading.Condition()
    release = threading.Event()

    def handler() -> None:
        with changed:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            changed.notify_all()
        release.wait(5)
        with changed:
            running[0] -= 1

    registry["ns.svc.op"] = handler
    recorders = [OutcomeRecorder() for _ in range(5)]
    for done in recorders:
        dispatcher.start(request_for(service_job()), RecordingSink(), done)
    with changed:  # wait for the pool to fill, however slow the machine
        assert changed.wait_for(lambda: running[0] >= 2, timeout=5)
    time.sleep(0.05)  # give a third handler (a bug) the chance to start
    release.set()
    for done in recorders:
        assert done.wait().status is ExecutionStatus.SUCCEEDED
    assert peak[0] == 2
    dispatcher.shutdown(wait=True)


def test_interceptors_see_dispatch_and_completion_and_cannot_break_a_job(
    registry: Registry, caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[tuple[str, object]] = []

    class Recorder:
        def on_dispatch(self, ctx: JobContext) -> None:
            events.append(("dispatch", ctx.job_id))

        def on_complete(self, ctx: JobContext, outcome: Outcome) -> None:
            events.append(("complete", outcome.status))

    class Broken:
        def on_dispatch(self, ctx: JobContext) -> None:
            raise RuntimeError("interceptor bug")

        def on_complete(self, ctx: JobContext, outcome: Outcome) -> None:
            raise RuntimeError("interceptor bug")

    registry["ns.svc.op"] = lambda: None
    dispatcher = PythonDispatcher(2, service_resolver=registry.__getitem__,
                                  interceptors=Interceptors([Broken(), Recorder()]))
    with caplog.at_level(logging.ERROR, logger="cronctl.dispatch"):
        _, done = run(dispatcher, service_job())
        assert done.wait().status is ExecutionStatus.SUCCEEDED
    dispatcher.shutdown()
    assert events == [("dispatch", "py-job"), ("complete", ExecutionStatus.SUCCEEDED)]
    assert sum("interceptor bug" in r.getMessage() or "raised in on_" in r.getMessage()
               for r in caplog.records) == 2


def test_service_targets_go_through_the_process_registry() -> None:
    from cronctl.jobs import registry as reg

    class Reports:
        def daily(self, ctx: JobContext) -> None:
            ctx.log.info("v1 for %s", ctx.job_id)

    class ReportsV2:
        def daily(self) -> None:
            raise RuntimeError("v2")

    def registry_of(cls: type) -> reg.ServiceRegistry:
        op = reg.Operation("acme.reports.daily", cls, "daily", "test:Reports.daily")
        return reg.ServiceRegistry(operations={op.id: op})

    previous = reg._default
    dispatcher = PythonDispatcher(1)
    try:
        reg.set_default_registry(registry_of(Reports))
        definition = service_job("acme.reports.daily")
        dispatcher.resolve(definition)
        sink, done = run(dispatcher, definition)
        assert done.wait().status is ExecutionStatus.SUCCEEDED
        assert sink.messages == ["v1 for py-job"]
        reg.set_default_registry(registry_of(ReportsV2))  # e.g. after a reload
        dispatcher.resolve(definition)
        _, done = run(dispatcher, definition)
        assert done.wait() == Outcome(ExecutionStatus.FAILED, error="RuntimeError: v2")
        with pytest.raises(TargetUnresolved, match="no registered service operation"):
            dispatcher.resolve(service_job("acme.reports.weekly"))
    finally:
        reg._default = previous
        dispatcher.shutdown()


def test_a_handlers_log_keeps_its_first_and_last_lines(registry: Registry) -> None:
    """The same output budget as commands (SPEC section 9): here max_log_lines = 6."""
    def chatty(ctx: JobContext) -> None:
        for i in range(20):
            ctx.log.info("line %d", i)

    registry["ns.svc.op"] = chatty
    d = PythonDispatcher(2, service_resolver=registry.__getitem__, max_lines=6)
    try:
        sink, done = run(d, service_job())
    finally:
        d.shutdown(wait=False)
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED
    dropped = sum(len(f"line {i}") + 1 for i in range(3, 17))
    assert sink.messages == ["line 0", "line 1", "line 2",
                             f"… 14 lines ({dropped} bytes) dropped …",
                             "line 17", "line 18", "line 19"]


def test_a_relayed_attempt_leaves_no_reference_cycle(registry: Registry) -> None:
    """A staged attempt's callback holds its Staged (as the runtime's does), which holds
    the execution: once the outcome is delivered, nothing of the attempt may stay alive
    in a cycle that only the cyclic collector frees (at 1,000 fires a second a full
    collection of them stalled the fires for tens of milliseconds)."""
    import gc
    from functools import partial

    from cronctl.dispatch.relay import Staged

    dispatcher = PythonDispatcher(1, service_resolver=registry.__getitem__)
    release, outcomes = threading.Event(), OutcomeRecorder()
    registry["ns.svc.block"] = lambda: release.wait(5)
    registry["ns.svc.op"] = lambda: None
    blocker = OutcomeRecorder()
    dispatcher.start(request_for(service_job("ns.svc.block")), RecordingSink(), blocker)
    staged = Staged("occ-relayed", time.monotonic() + 60)

    def delivered(s: Staged, outcome: Outcome) -> None:
        outcomes(outcome)

    assert dispatcher.stage(request_for(service_job()), RecordingSink(),
                            partial(delivered, staged), staged)
    dispatcher.relay.push([staged])
    del staged
    was_enabled = gc.isenabled()
    gc.disable()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        release.set()  # the worker ends the blocker, then takes the staged attempt
        assert blocker.wait(5).status is ExecutionStatus.SUCCEEDED
        assert outcomes.wait(5).status is ExecutionStatus.SUCCEEDED
        dispatcher.shutdown(wait=True)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, Staged)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert left == []


def test_a_submitted_attempt_counts_as_a_worker_before_its_thread_runs(
        registry: Registry) -> None:
    """``relay.running`` counts the workers that will take a staged fire when their attempt
    ends. An attempt counts from its submission: at a crowded instant the scheduler
    thread dispatches the first attempts, then gives way to the workers while they start
    the staged fires; judged before the pool's threads ran, it took the GIL back and
    stalled the staged fires by 10-15 ms in the middle of each second."""
    dispatcher = PythonDispatcher(1, service_resolver=registry.__getitem__)
    started, release = blocking(registry)
    registry["ns.svc.op"] = lambda: None
    first, second, queued = OutcomeRecorder(), OutcomeRecorder(), OutcomeRecorder()
    dispatcher.start(request_for(service_job("ns.svc.block")), RecordingSink(), first)
    assert started.wait(5)
    dispatcher.start(request_for(service_job()), RecordingSink(), second)
    assert dispatcher.relay.running == 2  # the second waits for the pool's one thread
    release.set()
    assert first.wait(5).status is ExecutionStatus.SUCCEEDED
    assert second.wait(5).status is ExecutionStatus.SUCCEEDED
    deadline = time.monotonic() + 5
    while dispatcher.relay.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert dispatcher.relay.running == 0
    # one that never runs (dropped at shutdown) is no worker either
    release.clear()
    started.clear()
    dispatcher.start(request_for(service_job("ns.svc.block")), RecordingSink(), first)
    assert started.wait(5)
    dispatcher.start(request_for(service_job()), RecordingSink(), queued)
    dispatcher.shutdown(wait=False)
    assert queued.wait(5).status is ExecutionStatus.CANCELLED
    release.set()
    while dispatcher.relay.running and time.monotonic() < deadline + 5:
        time.sleep(0.01)
    assert dispatcher.relay.running == 0
