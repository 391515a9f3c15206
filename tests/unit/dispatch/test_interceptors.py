"""Interceptors load from a real dist-info on sys.path; their exceptions are contained."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cronctl.context import JobContext
from cronctl.dispatch.base import Outcome
from cronctl.dispatch.interceptors import Interceptors
from cronctl.dispatch.jobcontext import make_context
from cronctl.dispatch.testing import RecordingSink, request_for
from cronctl.jobs.model import CommandTarget, ExecutionStatus, JobDefinition

MODULE = '''
EVENTS = []

class CountingInterceptor:
    instances = 0

    def __init__(self):
        CountingInterceptor.instances += 1

    def on_dispatch(self, ctx):
        EVENTS.append(("dispatch", ctx.job_id))

    def on_complete(self, ctx, outcome):
        EVENTS.append(("complete", str(outcome.status)))


class _Obj:
    def on_complete(self, ctx, outcome):
        raise RuntimeError("broken interceptor")


broken_object = _Obj()
not_an_interceptor = 42
'''


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "acme_interceptors.py").write_text(MODULE)
    dist = tmp_path / "acme_interceptors-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-interceptors\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[cronctl.interceptors]\n"
        "counting = acme_interceptors:CountingInterceptor\n"
        "broken = acme_interceptors:broken_object\n"
        "useless = acme_interceptors:not_an_interceptor\n"
        "missing = acme_interceptors_missing:Thing\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "acme_interceptors"
    sys.modules.pop("acme_interceptors", None)


def context() -> JobContext:
    job = JobDefinition(id="j", target=CommandTarget(("true",)), cron="* * * * *")
    return make_context(request_for(job), RecordingSink())


def test_entry_points_load_classes_and_objects(installed: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="cronctl.dispatch"):
        interceptors = Interceptors.load()
    module = sys.modules[installed]
    assert len(interceptors) == 2  # the class (instantiated once) and the object
    assert module.CountingInterceptor.instances == 1
    errors = " ".join(r.getMessage() for r in caplog.records)
    assert "useless" in errors and "missing" in errors

    ctx = context()
    with caplog.at_level(logging.ERROR, logger="cronctl.dispatch"):
        interceptors.on_dispatch(ctx)
        interceptors.on_complete(ctx, Outcome(ExecutionStatus.SUCCEEDED))
    assert module.EVENTS == [("dispatch", "j"), ("complete", "succeeded")]
    assert any("raised in on_complete" in r.getMessage() for r in caplog.records)


def test_no_interceptors_is_falsy() -> None:
    empty = Interceptors(())
    assert not empty
    empty.on_dispatch(context())  # nothing to call, nothing raised
    assert Interceptors.load("cronctl.no-such-group").objects == ()


def test_interceptor_that_raises_everywhere_is_contained() -> None:
    class Hostile:
        def on_dispatch(self, ctx: JobContext) -> None:
            raise KeyError("x")

        def on_complete(self, ctx: JobContext, outcome: Outcome) -> None:
            raise ValueError("y")

    calls: list[str] = []

    class After:
        def on_dispatch(self, ctx: JobContext) -> None:
            calls.append("after")

    interceptors = Interceptors([Hostile(), After()])
    interceptors.on_dispatch(context())
    interceptors.on_complete(context(), Outcome(ExecutionStatus.FAILED, error="e"))
    assert calls == ["after"]  # a raising interceptor does not stop the next one
