"""Microseconds per fire of each step of the untracked fire path, timed one step at a
time on one thread (no profiler, no other thread competing for the GIL).

``python -m bench.profile_steps [--jobs N] [--gc default|freeze|disable] [--rounds R]``
(each step's best of R rounds). The steps, in the order a fire takes them:

1. ``core.tick``: heap pop, the planned-instant checks, the job's next instant pushed,
   the guards (overlap, group, slot): a Fire, or an Enqueue once the slots are taken;
2. ``Firing._run`` over the tick's actions (one Enqueue each while the slots are full);
3. ``Firing._prepare``: the target resolved (``dispatcher.resolve``);
4. ``Firing._launch`` without the dispatcher: sink, request, Run, lateness, cursor;
5. ``PythonDispatcher.start``: the JobContext (and its SinkLogger), the execution, one
   ``submit`` to the worker pool (here a list append: no thread is woken);
6. the worker: ``_run_sync`` (the handler, the outcome, the ``done`` message posted);
7. the ``done`` message: ``core.on_complete`` (the Finish and, from the slot queue, the
   next Fire) and ``Firing._final``;
8. the two INFO lines (``fired ...``, ``finished ...``) formatted into a file.

Each is timed over a whole burst (N fires) and divided by N; see bench/PROFILE.md.
"""

from __future__ import annotations

import argparse
import gc
import logging
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import _probe


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def steps(n: int, gc_mode: str) -> list[tuple[str, float]]:
    """One round: (step, us per fire) in order."""
    from cronctl.core import Enqueue, Fire, SchedulerCore
    from cronctl.dispatch.base import Outcome
    from cronctl.dispatch.interceptors import Interceptors
    from cronctl.dispatch.logbuffer import LogFlusher
    from cronctl.dispatch.python import PythonDispatcher
    from cronctl.jobs.model import ExecutionStatus, Isolation, JobDefinition, PythonTarget
    from cronctl.runtime.fire.firing import Firing
    from cronctl.runtime.fire.records import Ready
    from cronctl.runtime.health import DatabaseHealth
    from cronctl.runtime.io import IoWorker
    from cronctl.runtime.logsetup import configure_logging
    from cronctl.store import open_store

    instant = datetime(2030, 1, 1, 8, 0, 0, tzinfo=UTC)
    jobs = [JobDefinition(id=f"j{i:05d}", target=PythonTarget("bench._probe", "probe"),
                          isolation=Isolation.THREAD,
                          cron="0 0 8 * * *", tracked=False, max_attempts=1)
            for i in range(n)]
    rows: list[tuple[str, float]] = []
    gc.collect()
    if gc_mode == "freeze":
        gc.freeze()
    elif gc_mode == "disable":
        gc.disable()

    def step(label: str, seconds: float) -> None:
        rows.append((label, seconds / n * 1e6))

    # 1. the tick, all slots free: as many Fires as slots (the rest Enqueue). Timed with
    # the slots unbounded too: a Fire costs a little more than an Enqueue.
    for slots in (10, n):
        core = SchedulerCore(jobs, max_concurrent_jobs=slots, durable=False)
        core.start(instant - timedelta(seconds=1))
        decision = None

        def tick(core: SchedulerCore = core) -> None:
            nonlocal decision
            decision = core.tick(instant)

        step(f"1. core.tick, {slots:,} slots", _timed(tick))
    assert decision is not None
    fires = [a for a in decision.actions if isinstance(a, Fire)]
    assert len(fires) == n

    store = open_store("none", node_id="steps")
    folder = Path(tempfile.mkdtemp())
    sink_file = open(folder / "run.log", "w")  # noqa: SIM115 - closed at the end
    configure_logging(logging.WARNING, "text", sink_file)
    queued: list[tuple[Any, ...]] = []

    class Pool:  # the worker pool, without threads: submit() only records the task
        def submit(self, fn: Callable[..., Any], *args: Any) -> None:
            queued.append((fn, args))

    dispatcher = PythonDispatcher(10, interceptors=Interceptors(()))
    dispatcher._pool = Pool()  # type: ignore[assignment]
    posted: list[tuple[object, ...]] = []
    io = IoWorker()
    firing = Firing(core=core, store=store, dispatcher=dispatcher,
                    flusher=LogFlusher(store), io=io, node_id="steps",
                    health=DatabaseHealth(check=lambda: None, back=lambda: None,
                                          later=io.after),
                    clock=lambda: datetime.now(UTC), post=posted.append, mono=time.monotonic)

    # 2. the action loop over a burst of Enqueues (what a tick with full slots returns)
    core10 = SchedulerCore(jobs, max_concurrent_jobs=10, durable=False)
    core10.start(instant - timedelta(seconds=1))
    waiting = core10.tick(instant)
    enqueues = [a for a in waiting.actions if isinstance(a, Enqueue)]
    step("2. Firing._run, one Enqueue", _timed(lambda: firing._run(enqueues)) * n
         / max(len(enqueues), 1))

    now = datetime.now(UTC)
    ready: list[Ready] = []

    def prepare() -> None:
        for a in fires:
            got = firing._prepare(a, now)
            assert isinstance(got, Ready)
            ready.append(got)

    step("3. Firing._prepare (resolve)", _timed(prepare))

    real_start = dispatcher.start
    handles: list[Any] = []

    def no_dispatch(request: Any, sink: Any, on_done: Any) -> Any:
        handles.append((request, sink, on_done))
        return None

    dispatcher.start = no_dispatch  # type: ignore[method-assign]
    step("4. Firing._launch, without dispatcher.start",
         _timed(lambda: [firing._launch(r) for r in ready]))
    dispatcher.start = real_start  # type: ignore[method-assign]

    from cronctl.dispatch.jobcontext import make_context
    from cronctl.dispatch.workers import CancelFlag

    step("5a. make_context alone",
         _timed(lambda: [make_context(req, sink, CancelFlag()) for req, sink, _ in handles]))
    for _ in range(2):  # the resolve cache is per start: fill it as _prepare would
        for r in ready:
            dispatcher.resolve(r.job)
    step("5. PythonDispatcher.start (pool.submit recorded)",
         _timed(lambda: [dispatcher.start(req, sink, done) for req, sink, done in handles]))
    _probe._samples.clear()
    step("6. worker: _run_sync (handler, outcome, done posted)",
         _timed(lambda: [fn(*args) for fn, args in queued]))

    done = [msg for msg in posted if msg[0] == "done"]
    ok = Outcome(ExecutionStatus.SUCCEEDED)
    step("7. done: core.on_complete + Firing._final (via on_done)",
         _timed(lambda: [firing.on_done(msg[1], ok) for msg in done]))

    configure_logging(logging.INFO, "text", sink_file)
    runtime_log = logging.getLogger("cronctl.runtime")
    from cronctl.runtime.logsetup import ids

    def lines() -> None:
        for a in fires:
            runtime_log.info("fired job=%s exec=%s planned=%s attempt=%d origin=%s",
                             a.job_id, "-", a.planned.isoformat(), a.attempt, a.origin.value,
                             extra=ids(a.job_id, None))
            runtime_log.info("finished job=%s exec=%s status=%s%s", a.job_id, "-",
                             "succeeded", "", extra=ids(a.job_id, None))

    from cronctl.runtime import logsetup

    flush = getattr(logsetup, "flush_logs", lambda: None)  # (a writer thread: wait for it)
    step("8. the two INFO lines (fired, finished): the calling thread", _timed(lines))
    step("8b. ... and their formatting and writing (the log thread, if any)", _timed(flush))
    sink_file.close()
    store.close()
    gc.enable()
    gc.unfreeze()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--gc", default="default", choices=("default", "freeze", "disable"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.jobs
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for label, us in steps(n, args.gc):
            best[label] = min(us, best.get(label, us))
    rows = list(best.items())
    print(f"untracked fire path, one step at a time, {n:,} fires, gc {args.gc}, best of "
          f"{args.rounds} (us per fire):")
    for label, us in rows:
        print(f"  {us:7.2f}  {label}")
    core_path = sum(us for label, us in rows if label[:2] in ("2.", "3.", "4.", "5.", "6.",
                                                               "7."))
    tick10 = next(us for label, us in rows if label.startswith("1. core.tick, 10 "))
    print(f"  {tick10 + core_path:7.2f}  sum of 1 (10 slots) to 7: the work one fire needs")
    lines_us = sum(us for label, us in rows if label.startswith("8"))
    print(f"  {tick10 + core_path + lines_us:7.2f}  ... with the two INFO lines")


if __name__ == "__main__":
    main()
