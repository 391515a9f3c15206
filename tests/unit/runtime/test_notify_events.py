"""Which events the fire path's hooks raise, their JSON, and who sends them (SPEC
section 7), with a fake store and delivery: no thread, no sleep, an injected clock."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronctl.core import CloseInterrupted, Fire, JobState, Missed, Skip, SkipReason
from cronctl.ids import occurrence_id
from cronctl.jobs.model import (
    CommandTarget,
    ExecutionStatus,
    JobDefinition,
    MisfirePolicy,
    Mode,
    Origin,
)
from cronctl.jobs.notify import EVENTS, NotifySpec
from cronctl.runtime.fire.records import Run
from cronctl.runtime.notify import events as notify_events
from cronctl.runtime.notify.events import Notifications
from cronctl.store.records import ExecutionRecord

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
S = timedelta(seconds=1)
HOOK = NotifySpec(webhook="https://hooks.example.org/x", on=EVENTS)


class FakeStore:
    persistent = True

    def __init__(self) -> None:
        self.marks: set[str] = set()
        self.previous: tuple[datetime, ExecutionStatus] | None = None
        self.rows: dict[str, list[object]] = {}
        self.skips: list[object] = []
        self.deliveries: list[tuple[bool, str | None]] = []

    def claim_notice(self, key: str, **_: Any) -> bool:
        if key in self.marks:
            return False
        self.marks.add(key)
        return True

    def previous_outcome(self, job_id: str, before: datetime, *,
                         scope_node: str | None = None) -> tuple[datetime, ExecutionStatus] | None:
        return self.previous

    def executions_of_occurrence(self, job_id: str, occ: str) -> list[object]:
        return self.rows.get(occ, [])

    def skips_covering(self, job_id: str, at: datetime) -> list[object]:
        return self.skips

    def get_execution(self, execution_id: int) -> None:
        return None

    def note_delivery(self, node_id: str, *, ok: bool, error: str | None = None,
                      now: datetime | None = None) -> None:
        self.deliveries.append((ok, error))


class FakeDelivery:
    def __init__(self) -> None:
        self.sent: list[tuple[NotifySpec, dict[str, Any]]] = []

    def send(self, spec: NotifySpec, event: dict[str, Any]) -> None:
        self.sent.append((spec, event))

    def close(self, timeout: float) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def job(job_id: str = "j", **kw: Any) -> JobDefinition:
    return JobDefinition(id=job_id, target=CommandTarget(("true",)), every=S, **kw)


def notes(jobs: list[JobDefinition], base: NotifySpec = HOOK, store: FakeStore | None = None,
          node: str = "n1", clock: Clock | None = None
          ) -> tuple[Notifications, FakeDelivery, FakeStore]:
    delivery, store = FakeDelivery(), store or FakeStore()
    by_id = {j.id: j for j in jobs}
    n = Notifications(base=base, node_id=node, store=store,  # type: ignore[arg-type]
                      clock=clock or Clock(), job_of=by_id.get, jobs=lambda: jobs,
                      store_down=lambda: False, delivery=delivery,  # type: ignore[arg-type]
                      threaded=False)
    return n, delivery, store


def run(j: JobDefinition, planned: datetime = T0, attempt: int = 1, eid: int | None = 7,
        key: int = 1, origin: Origin = Origin.CRON) -> Run:
    fire = Fire(key, j.id, planned, planned, attempt, origin, occurrence_id(j.id, planned))
    return Run(fire, j, eid)


def kinds(delivery: FakeDelivery) -> list[tuple[str, object]]:
    return [(e["event"], e["status"]) for _, e in delivery.sent]


def test_a_failing_occurrence_then_a_success_gives_failed_dead_letter_recovered() -> None:
    j = job(max_attempts=2)
    n, delivery, store = notes([j])
    n.finished(run(j, attempt=1, eid=1), ExecutionStatus.FAILED, "exit code 1")
    n.finished(run(j, attempt=2, eid=2), ExecutionStatus.DEAD_LETTER, "exit code 1")
    store.previous = (T0, ExecutionStatus.DEAD_LETTER)
    n.finished(run(j, T0 + S, eid=3), ExecutionStatus.SUCCEEDED, None)
    n.finished(run(j, T0 + 2 * S, eid=4), ExecutionStatus.SUCCEEDED, None)
    n.pump()
    assert kinds(delivery) == [("failed", "failed"), ("failed", "dead_letter"),
                               ("dead_letter", "dead_letter"), ("succeeded", "succeeded"),
                               ("recovered", "succeeded"), ("succeeded", "succeeded")]
    first = delivery.sent[0][1]
    assert first == {"event": "failed", "job": "j", "occurrence_id": occurrence_id("j", T0),
                     "scheduled_at": "2026-03-01T12:00:00.000000Z", "execution_id": 1,
                     "attempt": 1, "status": "failed", "error": "exit code 1", "reason": None,
                     "count": 1, "node": "n1", "at": "2026-03-01T12:00:00.000000Z"}
    assert list(first) == ["event", "job", "occurrence_id", "scheduled_at", "execution_id",
                           "attempt", "status", "error", "reason", "count", "node", "at"]


def test_recovered_needs_a_failed_previous_occurrence() -> None:
    j = job()
    n, delivery, store = notes([j])
    store.previous = (T0, ExecutionStatus.SUCCEEDED)
    n.finished(run(j, T0 + S), ExecutionStatus.SUCCEEDED, None)
    # a retry that succeeds: the occurrence did not fail, its first attempt did
    n.finished(run(j, T0 + 2 * S, attempt=1, eid=8), ExecutionStatus.FAILED, "x")
    n.finished(run(j, T0 + 2 * S, attempt=2, eid=9), ExecutionStatus.SUCCEEDED, None)
    n.pump()
    assert "recovered" not in [k for k, _ in kinds(delivery)]


def test_untracked_jobs_remember_their_last_outcome_on_this_node() -> None:
    j = job(tracked=False)
    n, delivery, store = notes([j])
    store.previous = (T0, ExecutionStatus.SUCCEEDED)  # never asked: no rows
    n.finished(run(j, T0, eid=None), ExecutionStatus.DEAD_LETTER, "boom")
    n.finished(run(j, T0 + S, eid=None), ExecutionStatus.SUCCEEDED, None)
    n.finished(run(j, T0 + 2 * S, eid=None), ExecutionStatus.SUCCEEDED, None)
    n.pump()
    assert [k for k, _ in kinds(delivery)].count("recovered") == 1


def test_the_newer_of_memory_and_store_decides_recovered() -> None:
    j = job()
    n, delivery, store = notes([j])
    n.finished(run(j, T0 + S, eid=2), ExecutionStatus.DEAD_LETTER, "boom")  # not stored yet
    store.previous = (T0, ExecutionStatus.SUCCEEDED)
    n.finished(run(j, T0 + 2 * S, eid=3), ExecutionStatus.SUCCEEDED, None)
    n.pump()
    assert ("recovered", "succeeded") in kinds(delivery)


def test_a_timeout_is_abandoned_and_on_the_last_attempt_dead_letter_not_failed() -> None:
    j = job(timeout=2 * S, max_attempts=2)
    n, delivery, _ = notes([j])
    first, last = run(j, attempt=1, eid=1, key=1), run(j, attempt=2, eid=2, key=2)
    n.abandoned(first)
    n.finished(first, ExecutionStatus.ABANDONED, "timed out after 0:00:02")
    n.abandoned(last)
    n.finished(last, ExecutionStatus.DEAD_LETTER, "timed out after 0:00:02")
    n.pump()
    assert kinds(delivery) == [("abandoned", "abandoned"), ("abandoned", "abandoned"),
                               ("dead_letter", "dead_letter")]
    assert delivery.sent[0][1]["error"] == "timed out after 2s"


def test_cancelled_and_interrupted() -> None:
    j = job()
    n, delivery, _ = notes([j])
    n.finished(run(j), ExecutionStatus.CANCELLED, "cancelled")
    n.interrupted(CloseInterrupted(5, "j", ExecutionStatus.DEAD_LETTER))
    n.interrupted(CloseInterrupted(6, "j", ExecutionStatus.LOST))  # a retry follows: none
    n.pump()
    assert kinds(delivery) == [("cancelled", "cancelled"), ("failed", "dead_letter"),
                               ("dead_letter", "dead_letter")]
    assert delivery.sent[1][1]["execution_id"] == 5


def test_only_subscribed_events_with_a_destination_are_sent() -> None:
    quiet = job("quiet", notify=NotifySpec(on=()))
    mine = job("mine", notify=NotifySpec(on=("succeeded",), command=("/bin/mail",)))
    default = job("default")
    n, delivery, _ = notes([quiet, mine, default], base=NotifySpec(webhook="http://h/x"))
    for j in (quiet, mine, default):
        n.finished(run(j), ExecutionStatus.SUCCEEDED, None)
        n.finished(run(j, T0 + S), ExecutionStatus.FAILED, "x")
        n.finished(run(j, T0 + 2 * S), ExecutionStatus.DEAD_LETTER, "x")
    n.pump()
    sent = [(spec, e["job"], e["event"]) for spec, e in delivery.sent]
    # the job's table over the global one key by key: mine keeps the global webhook
    both = NotifySpec(on=("succeeded",), webhook="http://h/x", command=("/bin/mail",))
    assert sent == [(both, "mine", "succeeded"),
                    (NotifySpec(webhook="http://h/x"), "default", "dead_letter")]
    nothing, delivery2, _ = notes([default], base=NotifySpec(on=EVENTS))  # nowhere to send
    nothing.finished(run(default), ExecutionStatus.DEAD_LETTER, "x")
    nothing.pump()
    assert delivery2.sent == []


def test_skips_once_per_decision_and_never_for_policy_misfires_or_removed() -> None:
    solo = job("solo", mode=Mode.SINGLE_INSTANCE)
    shared = FakeStore()
    a, sent_a, _ = notes([solo], store=shared, node="a")
    b, sent_b, _ = notes([solo], store=shared, node="b")
    for n in (a, b):  # both nodes see the cluster-wide lock held at the same instant
        n.skipped(Skip("solo", T0, Origin.CRON, SkipReason.OVERLAP))
        n.skipped(Skip("solo", T0 + S, Origin.CRON, SkipReason.REMOVED))
        n.skipped(Skip("solo", T0 + S, Origin.MISFIRE, SkipReason.MISFIRE))
        # a late set's instant dropped behind the set's own fire: no missed event covers it
        n.skipped(Skip("solo", T0 + 2 * S, Origin.CRON, SkipReason.MISFIRE, detail="late"))
        n.pump()
    # the same instant decided for different reasons by two nodes' views (a single_instance
    # job in a serial group: one sees its lock held, the other the group busy) is one
    # skip record cluster-wide (the ledger keys it by instant), so one event
    a.skipped(Skip("solo", T0 + 3 * S, Origin.CRON, SkipReason.OVERLAP))
    a.pump()
    b.skipped(Skip("solo", T0 + 3 * S, Origin.CRON, SkipReason.EXPIRED))
    b.pump()
    events = [e for _, e in sent_a.sent + sent_b.sent]
    assert [(e["event"], e["reason"], e["status"], e["execution_id"]) for e in events] == [
        ("skipped", "overlap", "skipped", None), ("skipped", "misfire", "skipped", None),
        ("skipped", "overlap", "skipped", None)]


def test_one_missed_event_per_set_cluster_wide() -> None:
    solo, each = job("solo", mode=Mode.SINGLE_INSTANCE), job("each")
    shared = FakeStore()
    states = {"solo": JobState(T0), "each": JobState(T0)}
    nodes = [notes([solo, each], store=shared, node=name) for name in ("a", "b")]
    for n, _, _ in nodes:
        n.begin(states, T0)
    try:
        for i, (n, _, _) in enumerate(nodes):  # the same set, decided a moment apart
            n.missed(Missed("solo", MisfirePolicy.SKIP, 5 + i, 5 + i, T0 + (5 + i) * S))
            n.missed(Missed("each", MisfirePolicy.SKIP, 5, 5, T0 + 5 * S))
            n.missed(Missed("each", MisfirePolicy.FIRE_ALL, 3, 0, T0 + 9 * S))  # none dropped
            n.pump()
    finally:
        for n, _, _ in nodes:
            n.close()
    sent = [(e["node"], e["job"], e["count"], e["scheduled_at"]) for _, d, _ in nodes
            for _, e in d.sent]
    # solo: once cluster-wide; each (every_instance): each node's own set
    assert sent == [("a", "solo", 5, "2026-03-01T12:00:05.000000Z"),
                    ("a", "each", 5, "2026-03-01T12:00:05.000000Z"),
                    ("b", "each", 5, "2026-03-01T12:00:05.000000Z")]
    assert {e["reason"] for _, d, _ in nodes for _, e in d.sent} == {"misfire"}


def test_late_when_late_after_passes_before_the_start() -> None:
    clock = Clock()
    j = job("w", late_after=2 * S, tracked=False)
    n, delivery, _ = notes([j], clock=clock, base=NotifySpec(webhook="http://h/x", on=("late",)))
    n.begin({}, T0)
    try:
        n.started(run(j, T0 + S))  # started on time
        clock.now = T0 + 4 * S
        n.check_late()  # T0+1 started; T0+2 not yet started, its late_after passed
        n.skipped(Skip("w", T0 + 3 * S, Origin.CRON, SkipReason.OVERLAP))
        clock.now = T0 + 6 * S
        n.check_late()  # T0+3 was skipped, T0+4 is late; T0+2 already reported
        clock.now = T0 + 20 * S
        n.started(run(j, T0 + 5 * S))  # starts late: once, found by the start itself
        n.started(run(j, T0 + 6 * S, origin=Origin.MANUAL))  # not a planned instant
        n.pump()
    finally:
        n.close()
    late = [(e["scheduled_at"][11:19], e["at"][11:19], e["status"], e["reason"])
            for _, e in delivery.sent]
    reason = "not started 2s after its planned instant"
    assert late == [("12:00:02", "12:00:04", None, reason),
                        ("12:00:04", "12:00:06", None, reason),
                        ("12:00:05", "12:00:20", None, reason)]


def test_late_watches_the_jobs_of_a_reload() -> None:
    """The jobs the late check watches are worked out once per job set: a reload (a new
    sequence) that adds late_after to a job is watched from the next check on."""
    clock = Clock()
    plain, watched = job("w", tracked=False), job("w", late_after=S, tracked=False)
    current: list[tuple[JobDefinition, ...]] = [(plain,)]
    delivery = FakeDelivery()
    n = Notifications(base=NotifySpec(webhook="http://h/x", on=("late",)), node_id="n1",
                      store=FakeStore(), clock=clock,  # type: ignore[arg-type]
                      job_of=lambda _: current[0][0], jobs=lambda: current[0],
                      store_down=lambda: False, delivery=delivery,  # type: ignore[arg-type]
                      threaded=False)
    n.begin({}, T0)
    try:
        clock.now = T0 + 3 * S
        n.check_late()
        assert delivery.sent == []
        current[0] = (watched,)  # reloaded at T0+5: watched from its next instant on
        clock.now = T0 + 5 * S
        n.check_late()
        clock.now = T0 + 8 * S
        n.check_late()
        n.pump()
    finally:
        n.close()
    assert [e["scheduled_at"][11:19] for _, e in delivery.sent] == ["12:00:05", "12:00:06",
                                                                     "12:00:07"]


def test_late_asks_the_store_for_jobs_other_nodes_run() -> None:
    clock = Clock()
    j = job("w", late_after=S, mode=Mode.SINGLE_INSTANCE)
    store = FakeStore()
    store.rows[occurrence_id("w", T0 + S)] = [row("w", T0 + S, started=T0 + S)]  # elsewhere
    n, delivery, _ = notes([j], clock=clock, store=store)
    n.begin({}, T0)
    try:
        clock.now = T0 + 3 * S
        n.check_late()
    finally:
        n.close()
    assert [e["scheduled_at"][11:19] for _, e in delivery.sent] == ["12:00:00", "12:00:02"]


def test_late_while_the_fire_waits_with_its_row_written_ahead() -> None:
    """Issue 24: a fire waiting for a slot (or a serial group, or a parent) has a pending
    first attempt written ahead. That is not a start: ``late`` is sent once late_after has
    passed, not when the fire finally starts, and the start does not send it again."""
    clock = Clock()
    j = job("w", late_after=3 * S, mode=Mode.SINGLE_INSTANCE)
    store = FakeStore()
    waiting = T0 + 2 * S
    store.rows[occurrence_id("w", waiting)] = [row("w", waiting)]  # pending, not started
    store.rows[occurrence_id("w", T0 + S)] = [row("w", T0 + S, attempt=2)]  # a retry ahead
    store.rows[occurrence_id("w", T0)] = [row("w", T0, status=ExecutionStatus.SUCCEEDED)]
    n, delivery, _ = notes([j], clock=clock, store=store,
                           base=NotifySpec(webhook="http://h/x", on=("late",)))
    n.begin({}, T0)
    try:
        clock.now = T0 + 5 * S
        n.check_late()  # T0+2 waits: late at T0+5
        clock.now = T0 + 45 * S
        n.started(run(j, waiting))  # it starts 43 s late: no second event
        n.pump()
    finally:
        n.close()
    assert [(e["scheduled_at"][11:19], e["at"][11:19]) for _, e in delivery.sent] == [
        ("12:00:02", "12:00:05")]


def row(job_id: str, planned: datetime, *, attempt: int = 1, started: datetime | None = None,
        status: ExecutionStatus = ExecutionStatus.PENDING) -> ExecutionRecord:
    return ExecutionRecord(id=1, job_id=job_id, occurrence_id=occurrence_id(job_id, planned),
                           scheduled_at=planned, attempt=attempt, origin=Origin.CRON,
                           status=status, node_id="n2", scope_node=None, fencing_token=1,
                           target="true", created_at=planned, started_at=started)


def test_a_full_inbox_drops_with_one_warning(monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(notify_events, "INBOX_SIZE", 2)
    dropped: list[int] = []
    j = job()
    n = Notifications(base=HOOK, node_id="n1", store=FakeStore(),  # type: ignore[arg-type]
                      clock=Clock(), job_of={"j": j}.get, jobs=lambda: [j],
                      store_down=lambda: False, failed=lambda: dropped.append(1),
                      delivery=FakeDelivery())  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, "cronctl.runtime"):
        for _ in range(5):
            n.finished(run(j), ExecutionStatus.SUCCEEDED, None)
    assert len(dropped) == 3
    assert len([r for r in caplog.records if "not keeping up" in r.message]) == 1


def test_a_failed_delivery_is_counted_and_recorded_until_one_works() -> None:
    failures: list[int] = []
    store = FakeStore()
    n = Notifications(base=HOOK, node_id="n1", store=store,  # type: ignore[arg-type]
                      clock=Clock(), job_of=lambda _: None, jobs=lambda: [],
                      store_down=lambda: False, failed=lambda: failures.append(1),
                      delivery=FakeDelivery())  # type: ignore[arg-type]
    n._delivered(True, None)  # nothing was failing: nothing to write
    n._delivered(False, "webhook https://h/…: HTTP 500")
    n._delivered(False, "webhook https://h/…: HTTP 500")
    n._delivered(True, None)
    n._delivered(True, None)
    assert len(failures) == 2
    assert store.deliveries == [(False, "webhook https://h/…: HTTP 500"),
                                (False, "webhook https://h/…: HTTP 500"), (True, None)]


def test_a_refused_final_status_raises_fenced() -> None:
    from cronctl.store.base import ExecutionRecord

    j = job()
    n, delivery, _ = notes([j], base=NotifySpec(webhook="http://h/x", on=("fenced",)))
    row = ExecutionRecord(id=5, job_id="j", occurrence_id="occ", scheduled_at=T0, attempt=1,
                          origin=Origin.CRON, status=ExecutionStatus.LOST, node_id="n1",
                          scope_node=None, fencing_token=3, target="true", created_at=T0,
                          error="lost: ...", fenced_status=ExecutionStatus.SUCCEEDED,
                          fenced_at=T0 + S)
    n.fenced(row, ExecutionStatus.SUCCEEDED, T0 + S)
    n.fenced(ExecutionRecord(**{**row.__dict__, "job_id": "gone"}),  # not a job here
             ExecutionStatus.SUCCEEDED, T0 + S)
    n.pump()
    [(_, sent)] = delivery.sent
    assert {k: sent[k] for k in ("event", "execution_id", "attempt", "status", "reason")} == {
        "event": "fenced", "execution_id": 5, "attempt": 1, "status": "succeeded",
        "reason": "succeeded after the attempt was taken over (recorded lost); not counted"}
