"""The public API in ``cronctl``: names, and decorators that leave methods callable."""

from __future__ import annotations

import asyncio

import cronctl
from cronctl import JobContext, cron_job, operation, service
from cronctl.jobs.decorators import CRON_JOBS_ATTR, OPERATION_ATTR, SERVICE_ATTR


def test_all_is_the_public_api() -> None:
    assert sorted(cronctl.__all__) == sorted([
        "DstFold", "DstGap", "ExecutionStatus", "JobContext", "MisfirePolicy", "Mode",
        "Origin", "OverlapPolicy", "__version__", "cron_job", "operation", "service",
    ])
    for name in cronctl.__all__:
        assert hasattr(cronctl, name), name
    assert cronctl.JobContext is JobContext
    assert isinstance(cronctl.__version__, str)


@service(namespace="t", name="svc")
class Svc:
    @operation("sync")
    @cron_job(id="svc.sync", cron="0 * * * * *", misfire_policy="fire_now")
    def sync(self, value: int) -> int:
        return value * 2

    @cron_job(id="svc.async", every="1m")
    @operation("async")
    async def run_async(self) -> str:
        return "async ok"

    @operation("twice")
    @cron_job(id="a", every="1m")
    @cron_job(id="b", every="2m")
    def twice(self) -> None: ...


def test_decorated_methods_stay_callable() -> None:
    svc = Svc()
    assert svc.sync(21) == 42
    assert Svc.sync(svc, 1) == 2
    assert asyncio.run(svc.run_async()) == "async ok"
    assert Svc.__name__ == "Svc" and Svc.sync.__name__ == "sync"


def test_decorators_record_metadata_only() -> None:
    assert getattr(Svc, SERVICE_ATTR).namespace == "t"
    assert getattr(Svc.sync, OPERATION_ATTR) == "sync"
    (spec,) = getattr(Svc.sync, CRON_JOBS_ATTR)
    # Only the arguments given: None means "not set".
    assert dict(spec.values) == {"id": "svc.sync", "cron": "0 * * * * *",
                                 "misfire_policy": "fire_now"}
    assert getattr(Svc.run_async, OPERATION_ATTR) == "async"
    assert [s.id for s in getattr(Svc.twice, CRON_JOBS_ATTR)] == ["a", "b"]


def test_operation_name_defaults_to_the_method_name() -> None:
    class K:
        @operation()
        def do_it(self) -> None: ...

    assert getattr(K.do_it, OPERATION_ATTR) == "do_it"
