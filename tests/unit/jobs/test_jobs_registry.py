"""Entry-point discovery against real (fake-installed) distributions, and resolution."""

from __future__ import annotations

import threading
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from jobs_helpers import FakeDists, Load, WriteJob

from cronctl.jobs.registry import (
    OperationError,
    ServiceRegistry,
    discover_services,
    resolve_operation,
    set_default_registry,
)

GOOD = """
from cronctl import cron_job, operation, service

CREATED = []

@service(namespace="acme", name="mail")
class Mail:
    def __init__(self) -> None:
        CREATED.append(self)

    @operation("send")
    @cron_job(id="mail.send", every="5m")
    def send(self) -> str:
        return "sent"

    @operation()
    def flush_queue(self, n: int = 1) -> int:
        return n

    def helper(self) -> None: ...
"""

MODULE_OF_SERVICES = """
from cronctl import operation, service

@service(namespace="acme", name="a")
class A:
    @operation("run")
    def run(self) -> str:
        return "a"

@service(namespace="acme", name="b")
class B:
    @operation("run")
    def run(self) -> str:
        return "b"
"""

BROKEN = """
import os
x = 1
raise RuntimeError("database password missing")
"""


def test_discovery_from_installed_distributions(fake_dists: FakeDists) -> None:
    good = fake_dists.module(fake_dists.unique("good_pkg"), GOOD)
    many = fake_dists.module(fake_dists.unique("many_pkg"), MODULE_OF_SERVICES)
    broken = fake_dists.module(fake_dists.unique("broken_pkg"), BROKEN)
    fake_dists.dist("fake-good", {"mail": f"{good}:Mail", "many": many})
    fake_dists.dist("fake-broken", {"broken": f"{broken}:Thing"})

    registry = discover_services()

    assert {"acme.mail.send", "acme.mail.flush_queue", "acme.a.run", "acme.b.run"} <= set(
        registry.operations)
    mine = [v for v in registry.violations if broken in v.source]
    assert len(mine) == 1, registry.violations
    message = mine[0].message
    assert "entry point 'broken'" in message
    assert "RuntimeError: database password missing" in message
    assert f"{broken}.py:3)" in message  # file:line of the innermost frame
    assert "\n" not in message
    assert [job.spec.id for job in registry.cron_jobs if job.operation_id.startswith("acme")
            ] == ["mail.send"]


def test_syntax_error_in_entry_point_module(fake_dists: FakeDists) -> None:
    bad = fake_dists.module(fake_dists.unique("syntax_pkg"), "def broken(:\n    pass\n")
    registry = discover_services([EntryPoint("s", bad, "cronctl.services")])
    (violation,) = registry.violations
    assert "SyntaxError" in violation.message
    assert f"{bad}.py:1" in violation.message


def test_entry_point_naming_something_else(fake_dists: FakeDists) -> None:
    mod = fake_dists.module(fake_dists.unique("other_pkg"), "class Plain: ...\nVALUE = 3\n")
    registry = discover_services([
        EntryPoint("plain", f"{mod}:Plain", "cronctl.services"),
        EntryPoint("value", f"{mod}:VALUE", "cronctl.services"),
        EntryPoint("module", mod, "cronctl.services"),
    ])
    assert len(registry.violations) == 3
    assert "not an @service class" in registry.violations[0].message
    assert "holds no @service class" in registry.violations[2].message


def test_resolve_operation_is_cached_and_bound(fake_dists: FakeDists) -> None:
    good = fake_dists.module(fake_dists.unique("good_pkg"), GOOD)
    registry = discover_services([EntryPoint("mail", f"{good}:Mail", "cronctl.services")])
    send = registry.resolve("acme.mail.send")
    assert send() == "sent"
    assert registry.resolve("service:acme.mail.send") is send
    assert registry.resolve("acme.mail.flush_queue")(3) == 3
    module = __import__(good)
    assert len(module.CREATED) == 1  # one instance for every operation of the class


def test_resolve_concurrently_creates_one_instance(fake_dists: FakeDists) -> None:
    good = fake_dists.module(fake_dists.unique("good_pkg"), GOOD)
    registry = discover_services([EntryPoint("mail", f"{good}:Mail", "cronctl.services")])
    threads = [threading.Thread(target=registry.resolve, args=("acme.mail.send",))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(__import__(good).CREATED) == 1


def test_unknown_operation_is_a_clear_error(fake_dists: FakeDists) -> None:
    good = fake_dists.module(fake_dists.unique("good_pkg"), GOOD)
    registry = discover_services([EntryPoint("mail", f"{good}:Mail", "cronctl.services")])
    with pytest.raises(OperationError, match=r"'acme.mail.sned'.*did you mean 'acme.mail.send'"):
        registry.resolve("acme.mail.sned")


def test_constructor_failure_is_an_operation_error(fake_dists: FakeDists) -> None:
    mod = fake_dists.module(fake_dists.unique("ctor_pkg"), """
        from cronctl import operation, service

        @service(namespace="x", name="y")
        class NeedsArgs:
            def __init__(self, url: str) -> None: ...

            @operation("go")
            def go(self) -> None: ...
    """)
    registry = discover_services([EntryPoint("x", f"{mod}:NeedsArgs", "cronctl.services")])
    with pytest.raises(OperationError, match="cannot create service .*TypeError"):
        registry.resolve("x.y.go")


def test_module_level_resolve_uses_the_default_registry(fake_dists: FakeDists) -> None:
    good = fake_dists.module(fake_dists.unique("good_pkg"), GOOD)
    set_default_registry(
        discover_services([EntryPoint("mail", f"{good}:Mail", "cronctl.services")]))
    try:
        assert resolve_operation("service:acme.mail.send")() == "sent"
    finally:
        set_default_registry(discover_services())


STRAY = """
from cronctl import cron_job, operation, service

@cron_job(id="loose", every="1m")
def loose() -> None: ...

class NotAService:
    @operation("op")
    @cron_job(id="not-service", every="1m")
    def op(self) -> None: ...

@service(namespace="s", name="t")
class Registered:
    @cron_job(id="no-operation", every="1m")
    def not_an_op(self) -> None: ...

    @operation("a")
    @cron_job(id="dup", every="1m")
    def a(self) -> None: ...

    @operation("b")
    @cron_job(id="dup", every="2m")
    def b(self) -> None: ...

    @operation("c")
    @cron_job(every="2m")
    def c(self) -> None: ...

@service(namespace="s", name="unregistered")
class Unregistered:
    @operation("x")
    @cron_job(id="unregistered", every="1m")
    def x(self) -> None: ...
"""


def test_cron_job_outside_a_registered_operation(fake_dists: FakeDists, load: Load) -> None:
    mod = fake_dists.module(fake_dists.unique("stray_pkg"), STRAY)
    registry = discover_services([EntryPoint("r", f"{mod}:Registered", "cronctl.services")])
    result = load(registry=registry)
    found = {(v.job, v.source.split(":")[-1]): v.message for v in result.violations}
    assert set(found) == {
        ("loose", "loose"),
        ("not-service", "NotAService.op"),
        ("no-operation", "Registered.not_an_op"),
        ("unregistered", "Unregistered.x"),
        ("dup", "Registered.b"),
        (None, "Registered.c"),
    }
    assert "not an @operation" in found[("loose", "loose")]
    assert "not decorated with @service" in found[("not-service", "NotAService.op")]
    assert "no 'cronctl.services' entry point" in found[("unregistered", "Unregistered.x")]
    assert "duplicate id 'dup'" in found[("dup", "Registered.b")]
    assert "missing or blank id" in found[(None, "Registered.c")]


def test_decorated_job_targets_an_operation_of_the_example(
    load: Load, write: WriteJob, monkeypatch: pytest.MonkeyPatch
) -> None:
    # make installs the example service into .run-site (the checkout's cronctl.toml
    # loads it from there), not into the virtualenv.
    site = Path(__file__).resolve().parents[3] / ".run-site"
    assert site.is_dir(), "the example service is not installed: run 'make venv'"
    monkeypatch.syspath_prepend(str(site))
    registry = discover_services()
    write("a.toml", '[jobs.sum]\ncron = "0 0 8 * * *"\n'
                    'target = "service:examples.reports.summary"\n'
                    '[jobs.typo]\ncron = "0 0 8 * * *"\n'
                    'target = "service:examples.reports.sumary"\n')
    result = load(registry=registry)
    (violation,) = result.violations
    assert violation.job == "typo"
    assert "did you mean 'examples.reports.summary'" in violation.message


def test_empty_registry_says_nothing_is_registered(load: Load, write: WriteJob) -> None:
    write("a.toml", '[jobs.x]\nevery = "1m"\ntarget = "service:a.b.c"\n')
    (violation,) = load(registry=ServiceRegistry()).violations
    assert "is the package that provides it installed" in violation.message


def test_entry_point_calling_sys_exit_is_one_violation(fake_dists: FakeDists) -> None:
    mod = fake_dists.module(fake_dists.unique("exit_pkg"), "import sys\nsys.exit(3)\n")
    (violation,) = discover_services([EntryPoint("e", mod, "cronctl.services")]).violations
    assert "SystemExit: 3" in violation.message
