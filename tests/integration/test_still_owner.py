"""``JobContext.still_owner()`` (SPEC section 4): a Python handler asks the store, before
an external side effect, whether its attempt is still the one that counts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronctl.dispatch.python import PythonDispatcher
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import ExecutionStatus, JobDefinition, Origin, ServiceTarget
from cronctl.runtime.fire.records import owner_check
from cronctl.store import Store, occurrence_id, open_store

S = ExecutionStatus
T0 = datetime(2026, 3, 8, 7, 0, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    yield s  # type: ignore[misc]
    s.close()


def running(store: Store, token: int | None) -> int:
    eid = store.try_insert_execution(
        job_id="j", occurrence_id=occurrence_id("j", T0), scheduled_at=T0, attempt=1,
        origin=Origin.CRON, node_id="n1", scope_node=None, fencing_token=token,
        status=S.RUNNING, started_at=T0, now=T0)
    assert eid is not None
    return eid


def test_owner_while_running_here_with_its_token(store: Store) -> None:
    eid = running(store, token=4)
    assert owner_check(store, eid, "n1", 4)() is True  # type: ignore[misc]
    assert owner_check(store, eid, "n2", 4)() is False  # type: ignore[misc]
    assert owner_check(store, eid, "n1", 3)() is False  # type: ignore[misc]
    assert owner_check(store, None, "n1", None) is None  # untracked: no check at all
    # another node took it over: recorded lost
    assert store.transition(eid, S.RUNNING, S.LOST, finished_at=T0)
    assert owner_check(store, eid, "n1", 4)() is False  # type: ignore[misc]


def test_a_handler_sees_it_through_its_context(store: Store) -> None:
    eid = running(store, token=None)
    seen: list[bool] = []

    def handler(ctx: object) -> None:
        seen.append(ctx.still_owner())  # type: ignore[attr-defined]
        store.transition(eid, S.RUNNING, S.LOST, finished_at=T0)  # taken over meanwhile
        seen.append(ctx.still_owner())  # type: ignore[attr-defined]

    d = PythonDispatcher(1, service_resolver=lambda _op: handler)
    try:
        job = JobDefinition(id="j", target=ServiceTarget("a.b.c"), cron="* * * * * *")
        request = request_for(job, execution_id=eid)
        from dataclasses import replace

        request = replace(request, still_owner=owner_check(store, eid, "n1", None))
        done = OutcomeRecorder()
        d.start(request, RecordingSink(), done)
        done.wait(5)
    finally:
        d.shutdown(wait=False)
    assert seen == [True, False]


def test_an_untracked_context_is_always_its_own_owner() -> None:
    from cronctl.dispatch.jobcontext import make_context

    job = JobDefinition(id="j", target=ServiceTarget("a.b.c"), cron="* * * * * *")
    assert make_context(request_for(job), RecordingSink()).still_owner() is True
