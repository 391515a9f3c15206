"""``SchedulerCore.away``: a node that is not a job's home tries its instants later."""

from __future__ import annotations

from datetime import timedelta

from core_helpers import T0, at, job, of

from cronctl.core import Fire, SchedulerCore
from cronctl.jobs.model import ExecutionStatus, JobDefinition


def test_an_away_job_is_due_its_delay_after_its_instant_a_home_job_on_time() -> None:
    core = SchedulerCore([job("home", every=10), job("away", every=10)])
    delays = {"home": timedelta(0), "away": timedelta(milliseconds=500)}

    def away(j: JobDefinition) -> timedelta:
        return delays[j.id]
    core.away = away
    core.start(T0)
    d = core.tick(at(10))
    [home] = of(d, Fire)
    assert (home.job_id, home.planned) == ("home", at(10))
    assert d.next_wake == at(10.5)
    [late] = of(core.tick(at(10.5)), Fire)
    assert (late.job_id, late.planned, late.due) == ("away", at(10), at(10.5))
    for f in (home, late):
        core.on_complete(f.key, ExecutionStatus.SUCCEEDED, None, at(10.6))
    delays["away"] = timedelta(0)  # its home left: on time once its next push comes
    fires = of(core.tick(at(20)), Fire) + of(core.tick(at(20.5)), Fire)  # (20 was pushed)
    assert [(f.job_id, f.due) for f in fires] == [("home", at(20)), ("away", at(20.5))]
    for f in fires:
        core.on_complete(f.key, ExecutionStatus.SUCCEEDED, None, at(20.6))
    assert sorted(f.job_id for f in of(core.tick(at(30)), Fire)) == ["away", "home"]
