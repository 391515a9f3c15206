"""TOML over decorator over mode-based defaults, key by key."""

from __future__ import annotations

from datetime import timedelta
from importlib.metadata import EntryPoint

import pytest
from jobs_helpers import FakeDists, Load, WriteJob

from cronctl.jobs.model import (
    CommandTarget,
    MisfirePolicy,
    Mode,
    OverlapPolicy,
    PythonTarget,
    ServiceTarget,
)
from cronctl.jobs.registry import ServiceRegistry, discover_services

SERVICE = """
from cronctl import JobContext, cron_job, operation, service

@service(namespace="shop", name="orders")
class Orders:
    @operation("sweep")
    @cron_job(id="orders.sweep", cron="0 */5 * * * *", timeout="1m", max_attempts=5,
              description="from the decorator", parameters={"a": 1})
    def sweep(self, ctx: JobContext) -> str:
        return "swept"

    @operation("single")
    @cron_job(id="orders.single", every="1h", mode="single_instance")
    def single(self) -> None: ...

    @operation("every-fire-now")
    @cron_job(id="orders.efn", every="1h", misfire_policy="fire_now")
    def every_fire_now(self) -> None: ...

    @operation("plain")
    def plain(self) -> None: ...
"""

GAP_ANCHOR = """
from datetime import datetime
from zoneinfo import ZoneInfo

from cronctl import cron_job, operation, service

@service(namespace="shop", name="gaps")
class Gaps:
    @operation("in-gap")
    # 02:30 on 2026-03-08 does not exist in New York (02:00 -> 03:00)
    @cron_job(id="gaps.in-gap", every="1h",
              anchor=datetime(2026, 3, 8, 2, 30, tzinfo=ZoneInfo("America/New_York")))
    def in_gap(self) -> None: ...

    @operation("in-fold")
    @cron_job(id="gaps.in-fold", every="1h",
              anchor=datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=ZoneInfo("America/New_York")))
    def in_fold(self) -> None: ...
"""


@pytest.fixture
def registry(fake_dists: FakeDists) -> ServiceRegistry:
    module = fake_dists.module(fake_dists.unique("shop"), SERVICE)
    registry = discover_services([EntryPoint("orders", f"{module}:Orders", "cronctl.services")])
    assert registry.violations == ()
    return registry


def test_decorator_values_and_mode_defaults(load: Load, registry: ServiceRegistry) -> None:
    jobs = {job.id: job for job in load(registry=registry).jobs}
    sweep = jobs["orders.sweep"]
    assert sweep.target == ServiceTarget("shop.orders.sweep")
    assert sweep.cron == "0 */5 * * * *"
    assert sweep.timeout == timedelta(minutes=1)
    assert sweep.max_attempts == 5
    assert sweep.misfire_policy is MisfirePolicy.SKIP  # every_instance default
    assert sweep.retry_backoff == timedelta(seconds=10)  # global default
    assert "Orders.sweep" in sweep.source
    single = jobs["orders.single"]
    assert single.mode is Mode.SINGLE_INSTANCE
    assert single.misfire_policy is MisfirePolicy.FIRE_NOW  # single_instance default


def test_explicit_fire_now_on_every_instance_is_honoured(load: Load, registry: ServiceRegistry,
                                                         write: WriteJob) -> None:
    job = {j.id: j for j in load(registry=registry).jobs}["orders.efn"]
    assert job.mode is Mode.EVERY_INSTANCE
    assert job.misfire_policy is MisfirePolicy.FIRE_NOW
    write("a.toml", '[jobs.t]\nevery = "1h"\ncommand = ["true"]\nmisfire_policy = "fire_now"\n')
    assert {j.id: j for j in load().jobs}["t"].misfire_policy is MisfirePolicy.FIRE_NOW


def test_toml_overrides_decorator_key_by_key(load: Load, registry: ServiceRegistry,
                                            write: WriteJob) -> None:
    path = write("o.toml", """
        [jobs."orders.sweep"]
        max_attempts = 2
        description = "from TOML"
        parameters = { b = 2 }
    """)
    result = load(registry=registry)
    assert result.ok, result.violations
    job = {j.id: j for j in result.jobs}["orders.sweep"]
    assert job.max_attempts == 2
    assert job.description == "from TOML"
    assert job.parameters == {"b": 2}  # a table replaces the table
    assert job.timeout == timedelta(minutes=1)  # untouched key keeps the decorator's
    assert job.cron == "0 */5 * * * *"
    assert job.target == ServiceTarget("shop.orders.sweep")
    assert job.source == f"{path}:1"
    assert result.defined == 3  # an override is not a second job


def test_toml_swaps_schedule_and_target_as_units(load: Load, registry: ServiceRegistry,
                                                write: WriteJob) -> None:
    write("o.toml", """
        [jobs."orders.sweep"]
        every = "90s"
        command = "echo replaced"
    """)
    job = {j.id: j for j in load(registry=registry).jobs}["orders.sweep"]
    assert job.cron is None and job.every == timedelta(seconds=90)
    assert job.target == CommandTarget(argv=("echo", "replaced"))


def test_toml_mode_changes_the_mode_default(load: Load, registry: ServiceRegistry,
                                           write: WriteJob) -> None:
    write("o.toml", '[jobs."orders.single"]\nmode = "every_instance"\n'
                    '[jobs."orders.efn"]\nmisfire_policy = "skip"\n')
    jobs = {j.id: j for j in load(registry=registry).jobs}
    assert jobs["orders.single"].misfire_policy is MisfirePolicy.SKIP
    assert jobs["orders.efn"].misfire_policy is MisfirePolicy.SKIP


def test_override_errors_point_at_the_right_source(load: Load, registry: ServiceRegistry,
                                                  write: WriteJob) -> None:
    write("o.toml", '[jobs."orders.single"]\noverlap_policy = "allow"\n')
    (violation,) = load(registry=registry).violations
    assert violation.key == "overlap_policy"
    assert violation.source.endswith("o.toml:2")


def test_global_tracked_default(load: Load, write: WriteJob) -> None:
    write("a.toml", '[jobs.a]\nevery = "1m"\ncommand = ["true"]\n'
                    '[jobs.b]\nevery = "1m"\ncommand = ["true"]\ntracked = true\n')
    jobs = {j.id: j for j in load(tracked=False).jobs}
    assert (jobs["a"].tracked, jobs["b"].tracked) == (False, True)


def test_defaults_of_a_config_only_job(load: Load, write: WriteJob) -> None:
    write("a.toml", '[jobs.a]\ncron = "@daily"\ntarget = "python:os:getcwd"\n')
    (job,) = load().jobs
    assert job.target == PythonTarget("os", "getcwd")
    assert job.cron == "0 0 0 * * *"
    assert (job.timezone, job.mode, job.overlap_policy) == ("UTC", Mode.EVERY_INSTANCE,
                                                            OverlapPolicy.SKIP)
    assert (job.misfire_threshold, job.catchup_limit, job.max_attempts) == (
        timedelta(seconds=60), 100, 3)
    assert (job.kill_timeout, job.jitter, job.timeout) == (timedelta(seconds=10),
                                                           timedelta(0), None)


def test_enum_spellings_and_command_forms(load: Load, write: WriteJob) -> None:
    write("a.toml", """
        [jobs.a]
        every = 90
        command = "backup --to '/var/backups/my dir'"
        mode = "Single-Instance"
        dst_gap = "SKIP"
        env = { LANG = "C" }
        cwd = "work"
        [jobs.b]
        every = "1h30m"
        command = "ls | wc -l"
        shell = true
    """)
    jobs = {j.id: j for j in load().jobs}
    a, b = jobs["a"], jobs["b"]
    assert a.every == timedelta(seconds=90)
    assert isinstance(a.target, CommandTarget)
    assert a.target.argv == ("backup", "--to", "/var/backups/my dir")
    assert a.target.env == {"LANG": "C"}
    assert a.target.cwd is not None and a.target.cwd.endswith("/work")
    assert a.mode is Mode.SINGLE_INSTANCE
    assert a.schedule_text == "@every 1m30s"
    assert b.target == CommandTarget(argv=("ls | wc -l",), shell=True)


def test_a_decorator_anchor_in_a_dst_gap_is_a_violation(load: Load,
                                                         fake_dists: FakeDists) -> None:
    # A zoned local time the clocks skip names no instant: Python would quietly read it
    # with the offset before the gap.
    module = fake_dists.module(fake_dists.unique("gaps"), GAP_ANCHOR)
    registry = discover_services([EntryPoint("gaps", f"{module}:Gaps", "cronctl.services")])
    result = load(registry=registry)
    (violation,) = result.violations
    assert (violation.job, violation.key) == ("gaps.in-gap", "anchor")
    assert "2026-03-08 02:30:00 does not exist in America/New_York" in violation.message
    assert "DST gap" in violation.message  # and the fold's second pass (fold=1) is fine
