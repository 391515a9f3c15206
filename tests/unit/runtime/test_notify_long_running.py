"""``long_running_after`` (SPEC sections 7 and 9): the ``long_running`` event once per
execution that runs longer, with a fixed duration or ``"auto"`` from the job's last 20
successes; no thread, no sleep, an injected clock."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from test_notify_events import T0, Clock, FakeStore, job, notes, run

from cronctl.jobs.model import ExecutionStatus
from cronctl.jobs.notify import EVENTS, NotifySpec
from cronctl.runtime.notify.longrun import auto_threshold

S = timedelta(seconds=1)
ON = NotifySpec(webhook="http://h/x", on=("long_running",))


class HistoryStore(FakeStore):
    def __init__(self, durations: list[float]) -> None:
        super().__init__()
        self.durations = durations
        self.reads = 0

    def list_executions(self, *, job_id: str, status: Any, limit: int) -> list[Any]:
        assert status is ExecutionStatus.SUCCEEDED and limit == 20
        self.reads += 1
        return [SimpleNamespace(started_at=T0, finished_at=T0 + d * S)
                for d in self.durations[:limit]]


def test_long_running_is_an_event_name() -> None:
    assert "long_running" in EVENTS


def test_once_per_execution_that_runs_longer() -> None:
    clock = Clock()
    j = job("slow", long_running_after=10 * S)
    n, delivery, _ = notes([j], clock=clock, base=ON)
    n.begin({}, T0)
    try:
        first, second = run(j, T0, key=1), run(j, T0 + S, key=2)
        first.started, second.started = T0, T0 + S
        n.started(first)
        n.started(second)
        n.pump()
        clock.now = T0 + 10 * S
        n.check_late()  # the first's 10 s are up
        n.finished(second, ExecutionStatus.SUCCEEDED, None)  # ended in time: never
        n.pump()
        clock.now = T0 + 60 * S
        n.check_late()
        n.check_late()
    finally:
        n.close()
    sent = [e for _, e in delivery.sent]
    assert [(e["event"], e["execution_id"], e["status"], e["reason"]) for e in sent] == [
        ("long_running", 7, "running", "running for more than 10s")]
    assert sent[0]["at"][11:19] == "12:00:10"


def test_not_sent_without_the_key_or_the_event() -> None:
    clock = Clock()
    plain = job("plain")
    unwanted = job("unwanted", long_running_after=S)
    n, delivery, _ = notes([plain, unwanted], clock=clock,
                           base=NotifySpec(webhook="http://h/x", on=("failed",)))
    n.begin({}, T0)
    n.started(run(plain))
    n.started(run(unwanted, key=2))
    n.pump()
    clock.now = T0 + 3600 * S
    n.check_late()
    n.close()
    assert delivery.sent == []


def test_auto_is_three_times_the_p95_of_the_last_successes_at_least_a_minute() -> None:
    assert auto_threshold([]) is None
    assert auto_threshold([1 * S] * 20) == timedelta(minutes=1)
    durations = [float(d) for d in range(10, 30)]  # p95 (nearest rank) of 10..29 s: 28 s
    assert auto_threshold([d * S for d in durations]) == 84 * S
    assert auto_threshold([d * S for d in range(1, 21)]) == timedelta(minutes=1)  # 57 s
    assert auto_threshold([100 * S]) == 300 * S


def test_auto_from_the_store() -> None:
    clock = Clock()
    store = HistoryStore([float(d) for d in range(30, 50)])  # p95: 48 s -> 144 s
    j = job("auto", long_running_after="auto")
    n, delivery, _ = notes([j], clock=clock, base=ON, store=store)
    n.begin({}, T0)
    a, b = run(j, T0, key=1), run(j, T0, key=2)
    a.started = b.started = T0
    n.started(a)
    n.started(b)
    n.pump()
    assert store.reads == 1  # read once, reused
    clock.now = T0 + 143 * S
    n.check_late()
    assert delivery.sent == []
    clock.now = T0 + 144 * S
    n.check_late()
    n.close()
    assert [e["reason"] for _, e in delivery.sent] == ["running for more than 2m 24s"] * 2


def test_auto_without_any_success_sends_nothing() -> None:
    clock = Clock()
    j = job("new", long_running_after="auto")
    n, delivery, _ = notes([j], clock=clock, base=ON, store=HistoryStore([]))
    n.begin({}, T0)
    n.started(run(j))
    n.pump()
    clock.now = T0 + 86400 * S
    n.check_late()
    n.close()
    assert delivery.sent == []
