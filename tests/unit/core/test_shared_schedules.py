"""Jobs that share a schedule share one Schedule object and its next instant: they fire
exactly when jobs with their own schedules would."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import Fire, SchedulerCore
from cronctl.jobs.model import ExecutionStatus

OK = ExecutionStatus.SUCCEEDED


def test_equal_schedules_are_shared_and_fire_at_the_same_instants() -> None:
    jobs = [job(f"j{i}", every=5) for i in range(3)] + [job("other", every=7)]
    core = SchedulerCore(jobs, max_concurrent_jobs=10)
    core.start(T0)
    schedules = {j: core._jobs[j].schedule for j in ("j0", "j1", "j2", "other")}
    assert schedules["j0"] is schedules["j1"] is schedules["j2"]
    assert schedules["other"] is not schedules["j0"]
    fired: list[tuple[str, float]] = []
    for second in range(1, 22):
        for fire in of(core.tick(at(second)), Fire):
            fired.append((fire.job_id, (fire.planned - T0).total_seconds()))
            core.on_complete(fire.key, OK, None, at(second))
    expected = sorted([(f"j{i}", float(s)) for i in range(3) for s in (5, 10, 15, 20)]
                      + [("other", 7.0), ("other", 14.0), ("other", 21.0)],
                      key=lambda f: (f[1], f[0]))
    assert sorted(fired, key=lambda f: (f[1], f[0])) == expected


def test_a_reload_that_changes_one_schedule_leaves_the_others_alone() -> None:
    jobs = [job("a", every=5), job("b", every=5)]
    core = SchedulerCore(jobs)
    core.start(T0)
    core.reload([job("a", every=5), job("b", every=3)], at(1))
    assert core._jobs["a"].schedule is not core._jobs["b"].schedule
    fires = of(core.tick(at(3)), Fire) + of(core.tick(at(5)), Fire)
    assert [(f.job_id, f.planned) for f in fires] == [("b", at(3)), ("a", at(5))]


def test_instants_of_a_shared_schedule_are_computed_from_each_jobs_own_cursor() -> None:
    # Same schedule, different cursors (a job that joined later): no answer is reused
    # for an instant it was not computed for.
    core = SchedulerCore([job("a", every=2)])
    core.start(T0)
    [fire] = of(core.tick(at(2)), Fire)
    core.on_complete(fire.key, OK, None, at(2))
    core.reload([job("a", every=2), job("b", every=2)], at(3))
    fires = of(core.tick(at(4) + timedelta(milliseconds=1)), Fire)
    assert sorted((f.job_id, f.planned) for f in fires) == [("a", at(4)), ("b", at(4))]
