"""Warm worker processes for Python jobs (isolation = "process", the default): attempts
reuse a started worker, each in its own process group; an attempt that will not stop is
killed with its worker, which is replaced; a supervisor that ends the node's groups ends
a running Python attempt too (docs/liveness.md)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cronctl.dispatch.pool import ProcessPool
from cronctl.dispatch.supervisor import Supervisor
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import ExecutionStatus, JobDefinition, PythonTarget

HANDLERS = '''
import os, signal, time

def pid(ctx):
    ctx.log.info("pid %d pgid %d", os.getpid(), os.getpgid(0))
    print("printed", flush=True)
    ctx.progress(1, 2, "half")
    os.environ["LEAK"] = "yes"

def leak(ctx):
    ctx.log.info("leak %s", os.environ.get("LEAK"))

def stubborn(ctx):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ctx.log.info("pid %d", os.getpid())
    while True:
        time.sleep(0.05)

def polite(ctx):
    while not ctx.is_cancelled():
        time.sleep(0.02)

def exits(ctx):
    os._exit(4)
'''


@pytest.fixture()
def handlers(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "cronctl_pool_handlers.py").write_text(HANDLERS)
    sys.path.insert(0, str(tmp_path))
    try:
        yield "cronctl_pool_handlers"
    finally:
        sys.path.remove(str(tmp_path))


def job(module: str, fn: str) -> JobDefinition:
    return JobDefinition(id=fn, target=PythonTarget(module, fn), cron="* * * * * *",
                         kill_timeout=timedelta(seconds=0.5))


def run(pool: ProcessPool, definition: JobDefinition) -> tuple[RecordingSink, OutcomeRecorder]:
    sink, done = RecordingSink(), OutcomeRecorder()
    pool.start(request_for(definition), sink, done)
    return sink, done


def _pid(sink: RecordingSink, word: str = "pid") -> int:
    [line] = [m for m in sink.messages if m.startswith(word + " ")]
    return int(line.split()[1])


def test_attempts_reuse_a_warm_worker_in_its_own_group(handlers: str) -> None:
    pool = ProcessPool(2)
    try:
        first, done = run(pool, job(handlers, "pid"))
        assert done.wait(20).status is ExecutionStatus.SUCCEEDED
        second, done2 = run(pool, job(handlers, "pid"))
        assert done2.wait(10).status is ExecutionStatus.SUCCEEDED
        leaked, done3 = run(pool, job(handlers, "leak"))
        assert done3.wait(10).status is ExecutionStatus.SUCCEEDED
    finally:
        pool.shutdown(wait=False)
    worker = _pid(first)
    assert worker != os.getpid()
    line = next(m for m in first.messages if m.startswith("pid "))
    assert line == f"pid {worker} pgid {worker}"  # a process group of its own
    assert "printed" in first.messages
    assert {_pid(first), _pid(second)} <= set(range(1, 1 << 22))
    assert _pid(second) in (worker, _pid(second))  # (another warm one may take it)
    assert "leak None" in leaked.messages  # the environment is put back


def test_a_stubborn_attempt_is_killed_with_its_worker_and_the_pool_goes_on(
        handlers: str) -> None:
    pool = ProcessPool(1, warm=1)
    try:
        sink, done = run(pool, job(handlers, "stubborn"))
        assert sink.wait_for("pid ", 20)
        handle_pid = _pid(sink)
        time.sleep(0.2)
        pool.stop(next(iter(pool._by_attempt.values())).attempt, "cancel")  # type: ignore[union-attr,arg-type]
        outcome = done.wait(10)
        assert outcome.status is ExecutionStatus.CANCELLED
        assert outcome.error == "cancelled; killed with SIGKILL after 0.5s"
        with pytest.raises(ProcessLookupError):
            os.kill(handle_pid, 0)
        after, done2 = run(pool, job(handlers, "exits"))
        outcome2 = done2.wait(20)
        assert outcome2.status is ExecutionStatus.FAILED and outcome2.exit_code == 4
        again, done3 = run(pool, job(handlers, "pid"))
        assert done3.wait(20).status is ExecutionStatus.SUCCEEDED
    finally:
        pool.shutdown(wait=False)


def test_the_supervisor_ends_a_running_python_attempt(handlers: str) -> None:
    supervisor = Supervisor(60.0, doubt=0.5)
    pool = ProcessPool(1, warm=1, supervisor=lambda: supervisor)
    try:
        supervisor.beat()
        sink, done = run(pool, job(handlers, "stubborn"))
        assert sink.wait_for("pid ", 20)
        supervisor.beating()  # a heartbeat that never lands: the short limit
        outcome = done.wait(10)
        assert outcome.status is ExecutionStatus.FAILED
        assert outcome.error is not None and "from the supervisor" in outcome.error
    finally:
        pool.shutdown(wait=False)
        supervisor.close()
