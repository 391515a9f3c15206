"""Dependents (SPEC section 8): ``after`` entries, the checks across jobs (unknown
parents, cycles, one shared schedule, tracked parents) and the schedule copied in."""

from __future__ import annotations

from datetime import timedelta

import pytest
from jobs_helpers import Load, WriteJob

from cronctl.jobs.convert import BadValue, to_after
from cronctl.jobs.model import AfterEdge, AfterOutcome


def test_entries() -> None:
    assert to_after(["extract", "load:any", "x:FAILED"]) == (
        AfterEdge("extract"), AfterEdge("load", AfterOutcome.ANY),
        AfterEdge("x", AfterOutcome.FAILED))
    assert to_after("extract") == (AfterEdge("extract"),)
    assert str(AfterEdge("load", AfterOutcome.ANY)) == "load:any"
    for bad in ([], ["a:maybe"], ["a b"], [1], ["a", "a:any"]):
        with pytest.raises(BadValue):
            to_after(bad)


def test_chain_takes_the_roots_schedule(write: WriteJob, load: Load) -> None:
    write("a.toml", """
        [jobs.extract]
        cron = "0 0 6 * * MON-FRI"
        timezone = "Europe/Helsinki"
        command = ["true"]

        [jobs.transform]
        after = ["extract"]
        after_timeout = "2h"
        command = ["true"]

        [jobs.load]
        after = ["transform:any"]
        command = ["true"]
        """)
    result = load()
    assert result.violations == ()
    jobs = {j.id: j for j in result.jobs}
    for job_id in ("transform", "load"):
        job = jobs[job_id]
        assert (job.cron, job.timezone) == ("0 0 6 * * MON-FRI", "Europe/Helsinki")
    assert jobs["transform"].after_timeout == timedelta(hours=2)
    assert jobs["load"].after == (AfterEdge("transform", AfterOutcome.ANY),)
    assert jobs["load"].after_timeout == timedelta(hours=24)


@pytest.mark.parametrize(("jobs", "expected"), [
    ('[jobs.d]\nafter = ["extrakt"]\ncommand = ["true"]\n',
     [("d", "after", "unknown job 'extrakt' (did you mean 'extract'?)")]),
    ('[jobs.d]\nafter = ["extract"]\ncron = "* * * * * *"\ncommand = ["true"]\n',
     [("d", "cron", "a dependent (after = [...]) runs at its parents' planned instants: "
                    "remove 'cron'")]),
    ('[jobs.d]\nafter = ["extract", "hourly"]\ncommand = ["true"]\n'
     '[jobs.hourly]\ncron = "0 0 * * * *"\ncommand = ["true"]\n',
     [("d", "after", "parents do not share one schedule: extract runs at '0 0 6 * * *' in "
                     "UTC (auto/auto), hourly at '0 0 * * * *' in UTC (auto/auto)")]),
    ('[jobs.d]\nafter = ["quiet"]\ncommand = ["true"]\n'
     '[jobs.quiet]\ncron = "0 0 6 * * *"\ntracked = false\ncommand = ["true"]\n',
     [("d", "after", "parent 'quiet' is not tracked (tracked = false): its outcomes are "
                     "not recorded, so nothing could follow them")]),
    ('[jobs.a1]\nafter = ["a2"]\ncommand = ["true"]\n'
     '[jobs.a2]\nafter = ["a1"]\ncommand = ["true"]\n'
     '[jobs.a3]\nafter = ["a1"]\ncommand = ["true"]\n',
     [("a1", "after", "dependency cycle: a1 -> a2 -> a1"),
      ("a2", "after", "dependency cycle: a2 -> a1 -> a2"),
      ("a3", "after", "parent 'a1' is invalid (see its violation)")]),
    ('[jobs.self]\nafter = ["self"]\ncommand = ["true"]\n',
     [("self", "after", "dependency cycle: self -> self")]),
    ('[jobs.d]\ncron = "0 0 6 * * *"\nafter_timeout = "1h"\ncommand = ["true"]\n',
     [("d", "after_timeout", "'after_timeout' only applies to dependents (after = [...])")]),
])
def test_violations_name_the_jobs(write: WriteJob, load: Load, jobs: str,
                                  expected: list[tuple[str, str, str]]) -> None:
    write("a.toml", '[jobs.extract]\ncron = "0 0 6 * * *"\ncommand = ["true"]\n')
    write("b.toml", jobs)
    got = [(v.job, v.key, v.message) for v in load().violations]
    assert got == expected


def test_dependents_of_single_instance_parents_are_single_instance(write: WriteJob,
                                                                   load: Load) -> None:
    write("a.toml", """
        [jobs.extract]
        every = "1m"
        mode = "single_instance"
        command = ["true"]

        [jobs.transform]
        after = ["extract"]
        command = ["true"]

        [jobs.load]
        after = ["transform"]
        command = ["true"]

        [jobs.audit]
        after = ["extract"]
        mode = "every_instance"
        command = ["true"]
        """)
    result = load()
    assert result.violations == ()
    modes = {j.id: j.mode.value for j in result.jobs}
    assert modes == {"extract": "single_instance", "transform": "single_instance",
                     "load": "single_instance", "audit": "every_instance"}
