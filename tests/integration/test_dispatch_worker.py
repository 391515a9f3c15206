"""A process-isolated Python attempt (``isolation = "process"``) through the dispatcher
``cronctl run`` uses, with a real worker process: what its job log and its error say."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cronctl.dispatch import RoutingDispatcher, default_dispatcher
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import ExecutionStatus, Isolation, JobDefinition, PythonTarget

HANDLERS = '''
def fail(ctx):
    ctx.log.info("about to fail")
    ctx.log.warning("two\\nlines")
    raise ValueError("boom")

def fine(ctx):
    print("INFO printed by the handler")
    ctx.log.debug("details")
'''


@pytest.fixture
def dispatcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RoutingDispatcher]:
    (tmp_path / "isoworker.py").write_text(HANDLERS)
    monkeypatch.syspath_prepend(str(tmp_path))  # the worker gets this process's sys.path
    d = default_dispatcher(2, interceptors=Interceptors(()))
    yield d
    d.shutdown(wait=False)


def _run(dispatcher: RoutingDispatcher, function: str) -> tuple[RecordingSink, object]:
    job = JobDefinition(id="iso", target=PythonTarget("isoworker", function),
                        cron="* * * * * *", isolation=Isolation.PROCESS,
                        kill_timeout=timedelta(seconds=1))
    sink, done = RecordingSink(), OutcomeRecorder()
    dispatcher.start(request_for(job), sink, done)
    return sink, done.wait(30)


def test_the_exception_is_the_error_and_records_keep_their_level(
        dispatcher: RoutingDispatcher) -> None:
    """Issue 39: the ERROR column said "exit code 1", the log "INFO    INFO about to
    fail" (the worker's `LEVEL message` text logged at its stream's level)."""
    sink, outcome = _run(dispatcher, "fail")
    assert outcome.status is ExecutionStatus.FAILED  # type: ignore[attr-defined]
    assert outcome.error == "ValueError: boom"  # type: ignore[attr-defined]
    assert outcome.exit_code == 1  # type: ignore[attr-defined]
    assert (logging.INFO, "about to fail") in sink.lines
    assert (logging.WARNING, "two") in sink.lines and (logging.WARNING, "lines") in sink.lines
    assert any("Traceback" in message for message in sink.messages)  # still in the log
    assert not any(message.startswith("\x1f") or message.startswith("INFO ")
                   for message in sink.messages), sink.lines


def test_a_handlers_own_output_is_left_as_it_is(dispatcher: RoutingDispatcher) -> None:
    sink, outcome = _run(dispatcher, "fine")
    assert outcome.status is ExecutionStatus.SUCCEEDED  # type: ignore[attr-defined]
    assert (logging.INFO, "INFO printed by the handler") in sink.lines
    assert (logging.DEBUG, "details") in sink.lines


def test_a_target_the_worker_cannot_resolve_says_why(dispatcher: RoutingDispatcher) -> None:
    _, outcome = _run(dispatcher, "missing")
    assert outcome.error is not None  # type: ignore[attr-defined]
    assert outcome.error.startswith("cannot resolve python:isoworker:missing")  # type: ignore[attr-defined]


