"""The relay's bookkeeping (:mod:`cronctl.runtime.fire.relaying`) on injected clocks and a
stand-in core and dispatcher: which waiting fires are staged, when a worker may take one,
and what the fire path gets back when the core admits them. Nothing here sleeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from cronctl.core import Enqueue, Fire, WaitReason
from cronctl.dispatch.base import DispatchRequest
from cronctl.dispatch.relay import Relay, Staged
from cronctl.jobs.model import JobDefinition, Origin, PythonTarget
from cronctl.runtime.fire.relaying import MARGIN, RelayedFires
from cronctl.runtime.inbox import Done, Message

T = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _job(job_id: str, **kw: Any) -> JobDefinition:
    return JobDefinition(id=job_id, target=PythonTarget("m", "f"), cron="* * * * * *",
                         tracked=False, **kw)


class Dispatcher:
    """Stages everything it is given (what the Python dispatcher does for a sync handler)."""

    def __init__(self) -> None:
        self.relay = Relay()
        self.staged: list[str] = []

    def stage(self, request: DispatchRequest, sink: object, on_done: Any,
              staged: Staged) -> bool:
        staged.run = (SimpleNamespace(request=request), on_done)
        self.staged.append(request.job.id)
        return True


class Clocks:
    def __init__(self) -> None:
        self.mono = 100.0
        self.wall = T


def _relayed(core: SimpleNamespace, dispatcher: Dispatcher, clocks: Clocks,
             posted: list[Message]) -> RelayedFires:
    return RelayedFires(
        dispatcher, core=core,  # type: ignore[arg-type]
        waiters=SimpleNamespace(enabled=False),  # type: ignore[arg-type]
        persistent=False, post=posted.append, mono=lambda: clocks.mono,
        clock=lambda: clocks.wall, sink_of=lambda job: None,  # type: ignore[arg-type,return-value]
        sink_for=lambda row: None,  # type: ignore[arg-type,return-value]
        stopping=lambda: False, store_down=lambda: False)


def _wait(job: JobDefinition, occurrence: str) -> Enqueue:
    return Enqueue(job.id, T, Origin.CRON, WaitReason.SLOT, occurrence)


def _fire(key: int, job: JobDefinition, occurrence: str) -> Fire:
    return Fire(key, job.id, T, T, 1, Origin.CRON, occurrence)


def test_waiting_fires_are_staged_in_the_cores_order_and_taken_in_it() -> None:
    core, dispatcher, clocks, posted = SimpleNamespace(slot_waiting=0), Dispatcher(), Clocks(), []
    relayed = _relayed(core, dispatcher, clocks, posted)
    jobs = [_job(f"j{i}") for i in range(3)]
    for i, job in enumerate(jobs):
        relayed.want(_wait(job, f"o{i}"), job)
    core.slot_waiting = 3
    relayed.settle([], first=True)
    assert dispatcher.staged == ["j0", "j1", "j2"] and relayed.open
    relay = dispatcher.relay
    taken = relay.take()  # a worker whose attempt ended
    assert taken is not None and taken.occurrence_id == "o0" and taken.started == T
    # the core admits o0 (the worker started it: adopt it) and o1 (nobody did: claim it)
    rest, started = relayed.adopt_started([_fire(1, jobs[0], "o0"), _fire(2, jobs[1], "o1")])
    assert [a.occurrence_id for a in rest] == ["o1"]
    assert [(a.occurrence_id, s is taken) for a, s in started] == [("o0", True)]
    nxt = relay.take()
    assert nxt is not None and nxt.occurrence_id == "o2"  # o1 was claimed, not taken


def test_a_staged_fire_is_not_taken_too_close_to_its_expiry() -> None:
    core, dispatcher, clocks, posted = SimpleNamespace(slot_waiting=0), Dispatcher(), Clocks(), []
    relayed = _relayed(core, dispatcher, clocks, posted)
    job = _job("late", misfire_threshold=timedelta(seconds=10))
    relayed.want(_wait(job, "o"), job)
    core.slot_waiting = 1
    relayed.settle([])
    clocks.mono += (job.misfire_threshold - MARGIN).total_seconds()  # the core decides it now
    assert dispatcher.relay.take() is None
    assert relayed.admitted(_fire(1, job, "o")) is None  # dispatched the ordinary way


def test_a_fire_decided_ahead_is_not_taken_before_its_instant() -> None:
    core, dispatcher, clocks, posted = SimpleNamespace(slot_waiting=0), Dispatcher(), Clocks(), []
    relayed = _relayed(core, dispatcher, clocks, posted)
    job = _job("ahead")
    relayed.not_before = T
    clocks.wall = T - timedelta(seconds=0.2)
    relayed.want(_wait(job, "o"), job)
    relayed.not_before = None
    core.slot_waiting = 1
    relayed.settle([])
    assert dispatcher.relay.take() is None
    clocks.wall = T
    assert dispatcher.relay.take() is not None


def test_a_fire_that_cannot_be_staged_closes_the_relay_until_the_queue_empties() -> None:
    core, dispatcher, clocks, posted = SimpleNamespace(slot_waiting=0), Dispatcher(), Clocks(), []
    relayed = _relayed(core, dispatcher, clocks, posted)
    plain, grouped = _job("plain"), _job("grouped", serial_group="g")
    relayed.want(_wait(plain, "o1"), plain)
    core.slot_waiting = 1
    relayed.settle([])
    relayed.want(_wait(grouped, "o2"), grouped)  # its guard is taken with its row: no relay
    assert not relayed.open
    assert dispatcher.relay.take() is None  # what was staged and not started: taken back
    relayed.want(_wait(plain, "o3"), plain)
    core.slot_waiting = 2
    relayed.settle([])
    assert dispatcher.staged == ["plain"]  # nothing staged while it is closed
    core.slot_waiting = 0
    relayed.settle([])
    assert relayed.open  # the core's queue is empty: it mirrors it again


def test_an_outcome_before_the_core_admits_the_fire_is_kept_for_the_adoption() -> None:
    core, dispatcher, clocks, posted = SimpleNamespace(slot_waiting=0), Dispatcher(), Clocks(), []
    relayed = _relayed(core, dispatcher, clocks, posted)
    job = _job("quick")
    relayed.want(_wait(job, "o"), job)
    core.slot_waiting = 1
    relayed.settle([])
    staged = dispatcher.relay.take()
    assert staged is not None
    _, on_done = staged.run
    on_done("succeeded")  # the worker posts the outcome through the inbox
    assert posted == [Done(staged, "succeeded")]  # type: ignore[arg-type]
    assert relayed.outcome(staged, "succeeded") is None  # not admitted yet: kept
    _, started = relayed.adopt_started([_fire(7, job, "o")])
    assert started == [(_fire(7, job, "o"), staged)] and staged.outcome == "succeeded"
