"""The store unreachable while the scheduler runs (SPEC section 4): attempts that need it
are not started, jobs that do not keep firing, and when it is back the misfire policy
covers the instants that could not start, from the oldest of them."""

from __future__ import annotations

import collections
from datetime import timedelta

from core_helpers import T0, at, job, of, skipped_instants

from cronctl.core import (
    AdvanceCursor,
    Decision,
    Fire,
    Missed,
    Retry,
    SchedulerCore,
    Skip,
    SkipReason,
    needs_store,
    schedule_for,
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
    # 6..20 are one set; its oldest is late by more than 3 s: all of it is missed
    assert (missed.count, missed.dropped, missed.newest) == (15, 14, at(20))
    assert of(d, Skip) == [Skip("t", at(6), Origin.MISFIRE, SkipReason.MISFIRE, at(19), 14)]
    [catch_up] = of(d, Fire)
    assert (catch_up.planned, catch_up.origin, catch_up.attempt) == (at(20), Origin.MISFIRE, 1)
    after = _drain(core, [catch_up], 20.3) + _run(core, 21, 23)
    planned = [f.planned for f in after if f.job_id == "t"]
    assert len(planned) == len(set(planned)) and at(20) in planned
    assert not set(planned) & {f.planned for f in before}
    assert all(p >= at(20) for p in planned)


def test_fire_all_runs_every_missed_instant_oldest_first_without_repeats() -> None:
    core, before = _outage(MisfirePolicy.FIRE_ALL)
    d = core.store_back(at(20.2))
    assert of(d, Missed)[0].dropped == 0
    fires = _drain(core, [f for f in of(d, Fire)], 20.3)
    catch_up = [f.planned for f in fires if f.origin is Origin.MISFIRE]
    assert catch_up == [at(s) for s in range(6, 21)]  # 6..20, oldest first, each once


def test_fire_all_keeps_the_newest_catchup_limit() -> None:
    core, _ = _outage(MisfirePolicy.FIRE_ALL, catchup_limit=4)
    d = core.store_back(at(20.2))
    assert of(d, Missed)[0].dropped == 11
    fires = _drain(core, of(d, Fire), 20.3)
    assert [f.planned for f in fires if f.origin is Origin.MISFIRE] == [
        at(17), at(18), at(19), at(20)]


def test_skip_advances_the_cursor_and_resumes_on_time() -> None:
    core, _ = _outage(MisfirePolicy.SKIP)
    d = core.store_back(at(20.2))
    assert of(d, Fire) == [] and of(d, AdvanceCursor) == [AdvanceCursor("t", at(20))]
    # the next on-time ones fire as cron, never a handled one
    later = [f for f in _run(core, 21, 22) if f.job_id == "t"]
    assert [f.origin for f in later] == [Origin.CRON] * len(later) and later
    assert all(f.planned > at(20) for f in later)


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


def test_every_instant_of_an_outage_is_accounted_for_exactly_once() -> None:
    """A per-second job whose runs take 2.5 s (overlap skips), the store down from 6 s to
    20.2 s: each planned instant ends as one started fire or inside one skip, never both,
    never twice, none forgotten (the skip ledger of SPEC section 4)."""
    j = job("t", misfire_policy=MisfirePolicy.FIRE_ALL, catchup_limit=4,
            misfire_threshold=3 * SECOND)
    core = SchedulerCore([j])
    core.start(T0)
    running: dict[int, int] = {}  # key -> end (ms)
    started: list[Fire] = []
    skips: list[Skip] = []
    down = False

    def handle(d: Decision, t: int) -> None:
        for a in d.actions:
            if isinstance(a, Skip):
                skips.append(a)
            elif isinstance(a, Fire):
                if down:
                    handle(core.unavailable(a.key, at(t / 1000)), t)
                else:
                    started.append(a)
                    running[a.key] = t + 2500

    for t in range(0, 30_001, 100):
        now = at(t / 1000)
        for key, end in list(running.items()):
            if end <= t:
                del running[key]
                handle(core.on_complete(key, OK, None, now), t)
        if t == 6000:
            down = True
        if t == 20_200:
            down = False
            handle(core.store_back(now), t)
        wake = core.next_wake()
        if wake is not None and wake <= now:
            handle(core.tick(now), t)
    ran = [f.planned for f in started if f.attempt == 1]
    counts = collections.Counter(ran + skipped_instants(skips, schedule_for(j)))
    assert [p for p, n in counts.items() if n > 1] == []
    assert [at(s) for s in range(1, 28) if counts[at(s)] != 1] == []
    catch_up = [f.planned for f in started if f.origin is Origin.MISFIRE]
    assert catch_up == [at(s) for s in range(17, 21)]  # the newest 4 of the set 8..20
    assert {s.reason for s in skips} == {SkipReason.OVERLAP, SkipReason.MISFIRE}
