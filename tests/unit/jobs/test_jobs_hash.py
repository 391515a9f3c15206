"""``H`` in a job's ``cron`` is resolved with the job's own id (SPEC section 8), once, at
load: ``cron`` is what fires, ``cron_written`` what was written."""

from __future__ import annotations

import hashlib
from importlib.metadata import EntryPoint

from jobs_helpers import FakeDists, Load, WriteJob

from cronctl.cron import CronExpression
from cronctl.jobs.checks import job_schedule
from cronctl.jobs.registry import discover_services


def h(job_id: str, i: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{job_id}\0{i}".encode()).digest()[:8], "big")


def test_toml_jobs_resolve_h_with_their_own_id(write: WriteJob, load: Load) -> None:
    write("a.toml", """
        [jobs.backup]
        cron = "H H(1-5) * * *"
        command = ["true"]

        [jobs.other]
        cron = "H H(1-5) * * *"
        command = ["true"]

        [jobs.plain]
        cron = "0 5 * * *"
        command = ["true"]
    """)
    result = load()
    assert result.violations == ()
    jobs = {job.id: job for job in result.jobs}
    backup = jobs["backup"]
    assert backup.cron == "0 34 1 * * *"
    assert backup.cron_written == "0 H H(1-5) * * *"
    assert backup.written_text == "0 H H(1-5) * * *" and backup.schedule_text == backup.cron
    other = jobs["other"]
    assert other.cron == f"0 {h('other', 1) % 60} {1 + h('other', 2) % 5} * * *"
    assert jobs["plain"].cron_written is None
    assert jobs["plain"].written_text == jobs["plain"].schedule_text == "0 0 5 * * *"
    # Everything that builds a schedule from the job needs no id.
    assert job_schedule(backup).expression == CronExpression("0 34 1 * * *")


def test_bad_h_is_a_violation_of_the_cron_key(write: WriteJob, load: Load) -> None:
    write("a.toml", """
        [jobs.bad]
        cron = "H(5-1) * * * *"
        command = ["true"]
    """)
    (violation,) = load().violations
    assert violation.job == "bad" and violation.key == "cron"
    assert "a.toml" in violation.source
    assert violation.message == ("minute field: H(5-1) is a descending range; H(a-b) "
                                 "needs a <= b (allowed: 0-59)")


SERVICE = """
from cronctl import cron_job, operation, service

@service(namespace="shop", name="hashed")
class Hashed:
    @operation("sweep")
    @cron_job(id="shop.sweep", cron="H H/6 * * *")
    def sweep(self) -> None: ...
"""


def test_decorated_jobs_resolve_h_with_their_id(fake_dists: FakeDists, load: Load) -> None:
    module = fake_dists.module(fake_dists.unique("shop"), SERVICE)
    registry = discover_services([EntryPoint("h", f"{module}:Hashed", "cronctl.services")])
    (job,) = load(registry=registry).jobs
    start = h("shop.sweep", 2) % 6
    hours = set(range(start, 24, 6))
    expr = CronExpression(job.cron or "")
    assert expr.minutes == frozenset({h("shop.sweep", 1) % 60})
    assert expr.hours == frozenset(hours)
    assert job.cron_written == "0 H H/6 * * *"
