"""The store unreachable while the scheduler runs (SPEC section 4): attempts that need it
are not started, jobs that do not keep firing, and when it is back the misfire policy
covers the instants that could not start, from the oldest of them."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import (
    AdvanceCursor,
    Fire,
    Missed,
    Retry,
    SchedulerCore,
    needs_store,
)
from cronctl.jobs.model import ExecutionStatus, MisfirePolicy, Mode, Origin

OK = ExecutionStatus.SUCCEEDED
SECOND = timedelta(seconds=1)


def _run(core: SchedulerCore, start_s: int, end_s: int, done_s: float = 0.5) -> list[Fire]:
    """Tick every second from ``start_s`` to ``end_s``; each fire completes in ``done_s``."""
    fires: list[Fire] = []
    for s in range(start_s, end_s + 1):
        for f in of(core.tick(at(s)), Fire):
            fires.append(f)
            fires += of(core.on_complete(f.key, OK, None, at(s + done_s)), Fire)
    return fires


def _drain(core: SchedulerCore, fires: list[Fire], now_s: float) -> list[Fire]:
    seen, todo = list(fires), list(fires)
    while todo:
        new = of(core.on_complete(todo.pop(0).key, OK, None, at(now_s)), Fire)
        seen += new
        todo += new
    return seen


def _outage(policy: MisfirePolicy, **kw: object) -> tuple[SchedulerCore, list[Fire]]:
    """A per-second job runs 1..5, the store fails for the fire at 6 and stays down
    until 20 (threshold 3 s): returns the core (store back at 20.2) and fires 1..5."""
    core = SchedulerCore([job("t", misfire_policy=policy, misfire_threshold=3 * SECOND, **kw),
                          job("u", tracked=False)])
    core.start(T0)
    before = [f for f in _run(core, 1, 5) if f.job_id == "t"]
    d = core.tick(at(6))
    [t6] = [f for f in of(d, Fire) if f.job_id == "t"]
    for f in of(d, Fire):
        if f.job_id == "u":
            core.on_complete(f.key, OK, None, at(6.5))
    assert of(core.unavailable(t6.key, at(6.01)), Fire) == []
    assert core.store_down and core.running == 0
    during = _run(core, 7, 20)
    # untracked jobs need no store: they fire on; tracked ones do not start
    assert {f.job_id for f in during} == {"u"} and len(during) == 14
    return core, before


def test_fire_now_runs_the_newest_missed_once_when_the_store_is_back() -> None:
    core, before = _outage(MisfirePolicy.FIRE_NOW)
    assert [f.planned for f in before] == [at(s) for s in range(1, 6)]
    d = core.store_back(at(20.2))
    assert not core.store_down
    [missed] = of(d, Missed)
    # 6..17 are late by more than 3 s: missed; 18..20 are merely late
    assert (missed.count, missed.dropped, missed.newest) == (12, 11, at(17))
    [catch_up] = of(d, Fire)
    assert (catch_up.planned, catch_up.origin, catch_up.attempt) == (at(17), Origin.MISFIRE, 1)
    after = _drain(core, [catch_up], 20.3) + _run(core, 21, 23)
    planned = [f.planned for f in after if f.job_id == "t"]
    assert len(planned) == len(set(planned)) and at(17) in planned
    assert not set(planned) & {f.planned for f in before}
    assert all(p >= at(17) for p in planned)


def test_fire_all_runs_every_missed_instant_oldest_first_without_repeats() -> None:
    core, before = _outage(MisfirePolicy.FIRE_ALL)
    d = core.store_back(at(20.2))
    assert of(d, Missed)[0].dropped == 0
    fires = _drain(core, [f for f in of(d, Fire)], 20.3)
    catch_up = [f.planned for f in fires if f.origin is Origin.MISFIRE]
    assert catch_up == [at(s) for s in range(6, 18)]  # 6..17, oldest first, each once


def test_fire_all_keeps_the_newest_catchup_limit() -> None:
    core, _ = _outage(MisfirePolicy.FIRE_ALL, catchup_limit=4)
    d = core.store_back(at(20.2))
    assert of(d, Missed)[0].dropped == 8
    fires = _drain(core, of(d, Fire), 20.3)
    assert [f.planned for f in fires if f.origin is Origin.MISFIRE] == [
        at(14), at(15), at(16), at(17)]


def test_skip_advances_the_cursor_and_resumes_on_time() -> None:
    core, _ = _outage(MisfirePolicy.SKIP)
    d = core.store_back(at(20.2))
    assert of(d, Fire) == [] and of(d, AdvanceCursor) == [AdvanceCursor("t", at(17))]
    # the late ones (18..20) and the next on-time one fire as cron, never a handled one
    later = [f for f in _run(core, 21, 22) if f.job_id == "t"]
    assert [f.origin for f in later] == [Origin.CRON] * len(later)
    assert all(f.planned > at(17) for f in later)


def test_a_retry_due_during_the_outage_is_held_and_runs_when_the_store_is_back() -> None:
    core = SchedulerCore([job("t", every=3600, retry_backoff=2 * SECOND)])
    core.start(T0)
    [f1] = of(core.tick(at(3600)), Fire)
    [retry] = of(core.on_complete(f1.key, ExecutionStatus.FAILED, "boom", at(3601)), Retry)
    assert (retry.attempt, retry.occurrence_id, retry.origin) == (2, f1.occurrence_id,
                                                                  Origin.CRON)
    # the store fails for the retry's attempt: it is held, not dropped
    [f2] = of(core.tick(at(3603)), Fire)
    core.unavailable(f2.key, at(3603))
    assert core.tick(at(3610)).actions == ()
    [again] = of(core.store_back(at(3611)), Fire)
    assert (again.attempt, again.planned, again.occurrence_id) == (2, at(3600),
                                                                   f1.occurrence_id)


def test_single_instance_jobs_need_the_store_even_untracked() -> None:
    assert needs_store(job(mode=Mode.SINGLE_INSTANCE, tracked=False))
    assert needs_store(job())
    assert not needs_store(job(tracked=False))
