"""Overlap, concurrency slots and serial groups: fed instants, never a sleep."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import Enqueue, Finish, Fire, SchedulerCore, Skip, SkipReason, WaitReason
from cronctl.jobs.model import ExecutionStatus, Origin, OverlapPolicy

OK = ExecutionStatus.SUCCEEDED


def test_first_tick_fires_at_planned_instant_and_reports_next_wake() -> None:
    core = SchedulerCore([job(every=10)])
    d = core.start(T0)
    assert d.actions == () and d.next_wake == at(10)
    assert core.tick(at(9.999)).actions == ()
    d = core.tick(at(10.002))
    [fire] = of(d, Fire)
    assert (fire.planned, fire.attempt, fire.origin) == (at(10), 1, Origin.CRON)
    assert d.next_wake == at(20)


def test_overlap_skip_drops_fires_while_running() -> None:
    core = SchedulerCore([job()])
    core.start(T0)
    [first] = of(core.tick(at(1)), Fire)
    skipped = of(core.tick(at(2)), Skip)
    assert [(s.planned, s.reason) for s in skipped] == [(at(2), SkipReason.OVERLAP)]
    core.on_complete(first.key, OK, None, at(2.5))
    assert [f.planned for f in of(core.tick(at(3)), Fire)] == [at(3)]


def test_queue_one_keeps_only_newest_and_runs_it_after_completion() -> None:
    core = SchedulerCore([job(overlap_policy=OverlapPolicy.QUEUE_ONE)])
    core.start(T0)
    [first] = of(core.tick(at(1)), Fire)
    d2 = core.tick(at(2))
    assert of(d2, Enqueue)[0].reason is WaitReason.QUEUE_ONE
    d3 = core.tick(at(3))
    assert [(s.planned, s.reason) for s in of(d3, Skip)] == [(at(2), SkipReason.SUPERSEDED)]
    d = core.on_complete(first.key, OK, None, at(3.5))
    [queued] = of(d, Fire)
    assert queued.planned == at(3) and queued.origin is Origin.CRON


def test_allow_overlaps() -> None:
    core = SchedulerCore([job(overlap_policy=OverlapPolicy.ALLOW)])
    core.start(T0)
    fires = of(core.tick(at(1)), Fire) + of(core.tick(at(2)), Fire)
    assert [f.planned for f in fires] == [at(1), at(2)]
    assert core.running == 2


def test_concurrency_limit_queues_fifo() -> None:
    jobs = [job(f"j{i}", every=10) for i in range(5)]
    core = SchedulerCore(jobs, max_concurrent_jobs=2)
    core.start(T0)
    d = core.tick(at(10))
    fires = of(d, Fire)
    assert [f.job_id for f in fires] == ["j0", "j1"]
    assert [e.job_id for e in of(d, Enqueue)] == ["j2", "j3", "j4"]
    assert all(e.reason is WaitReason.SLOT for e in of(d, Enqueue))
    started = [f.job_id for f in of(core.on_complete(fires[1].key, OK, None, at(11)), Fire)]
    started += [f.job_id for f in of(core.on_complete(fires[0].key, OK, None, at(12)), Fire)]
    assert started == ["j2", "j3"]
    assert core.running == 2 and core.waiting == 1


def test_serial_group_never_runs_two_together_fifo() -> None:
    jobs = [job(f"g{i}", every=10, serial_group="db") for i in range(3)] + [job("free", every=10)]
    core = SchedulerCore(jobs, max_concurrent_jobs=10)
    core.start(T0)
    d = core.tick(at(10))
    assert [f.job_id for f in of(d, Fire)] == ["free", "g0"]
    assert [(e.job_id, e.reason) for e in of(d, Enqueue)] == [
        ("g1", WaitReason.GROUP), ("g2", WaitReason.GROUP)]
    g0 = of(d, Fire)[1]
    [g1] = of(core.on_complete(g0.key, OK, None, at(11)), Fire)
    assert g1.job_id == "g1"
    [g2] = of(core.on_complete(g1.key, OK, None, at(12)), Fire)
    assert g2.job_id == "g2"


def test_serial_group_waiter_then_waits_for_slot_in_order() -> None:
    jobs = [job("a", every=10, serial_group="x"), job("b", every=10, serial_group="x"),
            job("c", every=10)]
    core = SchedulerCore(jobs, max_concurrent_jobs=1)
    core.start(T0)
    d = core.tick(at(10))
    [a] = of(d, Fire)
    # b waits for the group, c for the slot; when a ends b gets the group and queues
    # behind c for the slot.
    d = core.on_complete(a.key, OK, None, at(11))
    [c] = of(d, Fire)
    assert c.job_id == "c"
    [b] = of(core.on_complete(c.key, OK, None, at(12)), Fire)
    assert b.job_id == "b"


def test_release_frees_slot_and_job_fires_again() -> None:
    """Containment: a fire the runtime could not start (store error, lost election,
    unresolvable target) gives back its slot and the job fires at its next instant."""
    core = SchedulerCore([job("a"), job("b")], max_concurrent_jobs=1)
    core.start(T0)
    d = core.tick(at(1))
    [a] = of(d, Fire)
    [b] = of(core.release(a.key, at(1)), Fire)
    assert b.job_id == "b"
    core.release(b.key, at(1))
    assert core.running == 0 and core.waiting == 0
    assert {f.job_id for f in of(core.tick(at(2)), Fire)} == {"a"}


def test_paused_job_skips_cron_but_manual_trigger_runs() -> None:
    core = SchedulerCore([job()])
    core.start(T0)
    core.set_paused("j", True)
    assert of(core.tick(at(1)), Skip)[0].reason is SkipReason.PAUSED
    occ, d = core.trigger("j", at(1.5))
    [fire] = of(d, Fire)
    assert fire.origin is Origin.MANUAL and fire.occurrence_id == occ


def test_manual_trigger_waits_for_running_execution_instead_of_overlapping() -> None:
    core = SchedulerCore([job()])
    core.start(T0)
    [first] = of(core.tick(at(1)), Fire)
    _, d = core.trigger("j", at(1.2))
    assert of(d, Enqueue)[0].reason is WaitReason.JOB
    [manual] = of(core.on_complete(first.key, OK, None, at(1.5)), Fire)
    assert manual.origin is Origin.MANUAL


def test_finish_written_for_success() -> None:
    core = SchedulerCore([job()])
    core.start(T0)
    [f] = of(core.tick(at(1)), Fire)
    [fin] = of(core.on_complete(f.key, OK, None, at(1.1)), Finish)
    assert fin.status is OK
    # a second completion of the same key (late callback) is ignored
    assert core.on_complete(f.key, OK, None, at(1.2)).actions == ()


def test_ten_thousand_jobs_tick_touches_only_due_entries() -> None:
    jobs = [job(f"j{i}", every=60 + i) for i in range(10_000)]
    core = SchedulerCore(jobs, max_concurrent_jobs=100_000)
    core.start(T0)
    # T0 is a multiple of 60s since the epoch; only every=60 is due at +60s... plus the
    # intervals dividing T0+60 evenly. Either way: a tick due nowhere does nothing.
    assert core.tick(T0 + timedelta(microseconds=1)).actions == ()
    d = core.tick(at(60))
    assert all(f.planned <= at(60) for f in of(d, Fire))


def test_release_with_a_reason_reports_the_skip_for_a_scheduled_fire_only() -> None:
    core = SchedulerCore([job("a")])
    core.start(T0)
    [f] = of(core.tick(at(1)), Fire)
    d = core.release(f.key, at(1), skip=SkipReason.UNRESOLVED_TARGET)
    assert [(s.planned, s.reason) for s in of(d, Skip)] == [
        (at(1), SkipReason.UNRESOLVED_TARGET)]
    assert core.running == 0
    _, d = core.trigger("a", at(1.5))
    [manual] = of(d, Fire)
    # a manual fire's record is its trigger request, not a skip of a planned instant
    assert of(core.release(manual.key, at(1.5), skip=SkipReason.UNRESOLVED_TARGET), Skip) == []
    assert [f.planned for f in of(core.tick(at(2)), Fire)] == [at(2)]


def test_a_tick_with_a_budget_decides_a_burst_in_slices_in_the_same_order() -> None:
    """``budget`` stops after that many due entries; the rest stay due (next_wake is not
    after now) and the following ticks decide them in the order one tick would."""
    def burst(budget: int | None) -> list[tuple[str, str]]:
        core = SchedulerCore([job(f"j{i:02d}", every=10) for i in range(25)],
                             max_concurrent_jobs=4)
        core.start(T0)
        seen: list[tuple[str, str]] = []
        for _ in range(100):
            d = core.tick(at(10), budget=budget)
            seen += [(type(a).__name__, a.job_id) for a in d.actions
                     if isinstance(a, Fire | Enqueue)]
            if d.next_wake is not None and d.next_wake > at(10):
                return seen
        raise AssertionError("the burst never ended")

    whole = burst(None)
    assert [kind for kind, _ in whole] == ["Fire"] * 4 + ["Enqueue"] * 21
    assert burst(3) == whole and burst(1) == whole
    core = SchedulerCore([job(f"j{i:02d}", every=10) for i in range(25)])
    core.start(T0)
    d = core.tick(at(10), budget=10)
    assert len(of(d, Fire)) == 10 and d.next_wake == at(10)
