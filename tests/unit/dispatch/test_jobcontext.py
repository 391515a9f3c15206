"""make_context builds the same JobContext the dataclass constructor would."""

from __future__ import annotations

import dataclasses
import logging
import threading
from datetime import UTC, datetime

from cronctl.context import JobContext
from cronctl.dispatch import jobcontext
from cronctl.dispatch.base import DispatchRequest
from cronctl.dispatch.logbuffer import ProcessLogSink
from cronctl.jobs.model import JobDefinition, Origin, PythonTarget

AT = datetime(2026, 3, 8, 7, 0, tzinfo=UTC)


def test_fast_context_equals_the_constructed_one() -> None:
    assert jobcontext._FAST  # JobContext changed shape: update make_context's field list
    job = JobDefinition(id="a", target=PythonTarget("m", "f"), cron="* * * * * *",
                        parameters={"k": 1}, payload=[1, 2])
    request = DispatchRequest(job, "occ", AT, 2, Origin.REPLAY, 42, 7)
    sink = ProcessLogSink("a")
    event = threading.Event()
    ctx = jobcontext.make_context(request, sink, event)
    expected = JobContext(job_id="a", execution_id=42, occurrence_id="occ", scheduled_at=AT,
                          attempt=2, origin="replay", parameters={"k": 1}, payload=[1, 2],
                          fencing_token=7, log=ctx.log, _cancel_event=event,
                          _progress=sink.progress)
    assert ctx == expected
    assert type(ctx.origin) is str and ctx.origin == "replay"
    assert isinstance(ctx.log, jobcontext.SinkLogger) and ctx.log.name == "cronctl.job.a"
    assert not ctx.is_cancelled()
    event.set()
    assert ctx.is_cancelled()
    try:
        ctx.job_id = "b"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:  # pragma: no cover
        raise AssertionError("JobContext must stay frozen")


def test_fast_sink_logger_is_a_constructed_logger() -> None:
    assert jobcontext._FAST_LOGGER  # logging.Logger changed shape: update SinkLogger
    sink = ProcessLogSink("a")
    fast = jobcontext.SinkLogger("cronctl.job.a", sink)
    reference = logging.Logger("cronctl.job.a")
    reference.propagate = False
    assert {k: v for k, v in vars(fast).items() if k != "_sink"} == vars(reference)
    assert fast._sink is sink and fast.isEnabledFor(logging.DEBUG)
    seen: list[tuple[int, str]] = []
    fast._sink = type("S", (), {"log": lambda self, lvl, msg: seen.append((lvl, msg))})()
    fast.info("x=%d", 1)
    assert seen == [(logging.INFO, "x=1")]
