"""Serial groups are FIFO across their jobs, also when the group's lock is released a
moment after the core frees the group (issue 9 finding 8): driven in 10 ms steps of
injected time, never a sleep."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core_helpers import T0, at, job

from cronctl.core import Decision, ExecKey, Fire, SchedulerCore, Skip
from cronctl.jobs.model import ExecutionStatus

OK = ExecutionStatus.SUCCEEDED


def ms(t: int) -> datetime:
    return at(t / 1000)


@dataclass
class OneNode:
    """One ``cronctl run`` node as the runtime drives the core: the group's lock row is
    taken with the execution row and released ``lag`` ms after the attempt ends (the final
    status is written by the I/O thread); a fire that finds it held is ``blocked`` and
    retried ``retry`` ms later (the runtime's REMOTE_RETRY)."""

    core: SchedulerCore
    duration: dict[str, int]  # ms per job
    lag: int = 50
    retry: int = 500
    holder: ExecKey | None = None
    free_at: int = 0
    running: dict[ExecKey, tuple[Fire, int]] = field(default_factory=dict)
    ran: list[tuple[str, datetime, int, int]] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)

    def handle(self, d: Decision, t: int) -> None:
        for a in d.actions:
            if isinstance(a, Skip):
                self.skips.append(a)
            elif isinstance(a, Fire):
                self.start(a, t)

    def start(self, f: Fire, t: int) -> None:
        if self.holder is not None or t < self.free_at:
            self.handle(self.core.blocked(f.key, ms(t), ms(t + self.retry), overlap=False), t)
            return
        self.holder = f.key
        self.running[f.key] = (f, t + self.duration[f.job_id])

    def step(self, t: int) -> None:
        for key, (f, end) in list(self.running.items()):
            if end <= t:
                del self.running[key]
                self.ran.append((f.job_id, f.planned, end - self.duration[f.job_id], end))
                self.holder, self.free_at = None, t + self.lag
                self.handle(self.core.on_complete(key, OK, None, ms(t)), t)
        wake = self.core.next_wake()
        if wake is not None and wake <= ms(t):
            self.handle(self.core.tick(ms(t)), t)

    def run(self, until: int) -> None:
        for t in range(0, until + 1, 10):
            self.step(t)


def test_a_waiting_job_gets_the_group_before_the_next_instant_of_the_blocker() -> None:
    # blocker runs 4.5 s every 5 s; late is due at second 2 of every 5; one serial group
    core = SchedulerCore([job("blocker", every=5, serial_group="g"),
                          job("late", every=5, anchor=at(2), serial_group="g")])
    core.start(T0)
    node = OneNode(core, {"blocker": 4500, "late": 200})
    node.run(60_000)
    late = sorted(p for j, p, _, _ in node.ran if j == "late")
    # every instant of late runs (none starves, none is skipped as overlap)...
    assert late[:10] == [at(2 + 5 * k) for k in range(10)], node.ran
    assert not [s for s in node.skips if s.job_id == "late"], node.skips
    # ...runs never overlap, and no instant of either job is lost without a record
    spans = sorted((start, end) for _, _, start, end in node.ran)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans
    for job_id, offset in (("blocker", 0), ("late", 2)):
        planned = [at(offset + 5 * k) for k in range(1 if offset == 0 else 0, 10)]
        done = {p for j, p, _, _ in node.ran if j == job_id}
        skipped = {s.planned for s in node.skips if s.job_id == job_id}
        assert not done & skipped
        assert set(planned) <= done | skipped, (job_id, sorted(done), sorted(skipped))


def test_fifo_across_the_group_when_the_lock_lags() -> None:
    # three jobs due together queue in order, a fourth one due while the second is
    # blocked by the lag queues behind them
    core = SchedulerCore([job(n, every=60, anchor=at(1), serial_group="g")
                          for n in ("a", "b", "c")]
                         + [job("d", every=60, anchor=at(2.3), serial_group="g")])
    core.start(T0)
    node = OneNode(core, {"a": 1000, "b": 1000, "c": 1000, "d": 1000})
    node.run(10_000)
    assert [j for j, _, _, _ in node.ran] == ["a", "b", "c", "d"]
