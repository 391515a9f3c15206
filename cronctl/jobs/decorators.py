"""``@service``, ``@operation`` and ``@cron_job``: metadata only, no registration.

The decorators attach plain attributes and return the very object they were given, so a
decorated method stays a normal method (callable directly, in tests, from other code).
Discovery happens later, in :mod:`cronctl.jobs.registry`, from the ``cronctl.services``
entry points: importing a module never schedules anything by itself.

``cron_job`` defaults every argument to ``None`` = "not set", so precedence can tell an
explicit ``misfire_policy="fire_now"`` from the mode-based default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from cronctl.jobs.model import DstFold, DstGap, MisfirePolicy, Mode, OverlapPolicy

SERVICE_ATTR = "__cronctl_service__"
OPERATION_ATTR = "__cronctl_operation__"
CRON_JOBS_ATTR = "__cronctl_cron_jobs__"

C = TypeVar("C", bound=type)
F = TypeVar("F", bound=Callable[..., Any])

Duration = str | int | float | timedelta


@dataclass(frozen=True)
class ServiceInfo:
    namespace: str
    name: str


@dataclass(frozen=True)
class CronJobSpec:
    """The arguments one ``@cron_job`` was given, minus those left at ``None``."""

    values: Mapping[str, Any]

    @property
    def id(self) -> Any:
        return self.values.get("id")


def service(*, namespace: str, name: str) -> Callable[[C], C]:
    """Mark a class as a service; its operations get the ids ``<namespace>.<name>.<op>``.

    The class is instantiated once, with no arguments, when one of its operations is
    first resolved. Register it (or its module) under the ``cronctl.services`` entry-point
    group of your package.
    """

    def mark(cls: C) -> C:
        setattr(cls, SERVICE_ATTR, ServiceInfo(namespace=namespace, name=name))
        return cls

    return mark


def operation(name: str | None = None) -> Callable[[F], F]:
    """Mark a method of an ``@service`` class as an operation (default name: the method's)."""

    def mark(fn: F) -> F:
        op_name = name if name is not None else getattr(fn, "__name__", "")
        setattr(_function_of(fn), OPERATION_ATTR, op_name)
        return fn

    return mark


def cron_job(
    *,
    id: str | None = None,  # the key is called id everywhere else too
    cron: str | None = None,
    every: Duration | None = None,
    anchor: datetime | str | None = None,
    timezone: str | None = None,
    enabled: bool | None = None,
    mode: Mode | str | None = None,
    overlap_policy: OverlapPolicy | str | None = None,
    serial_group: str | None = None,
    misfire_policy: MisfirePolicy | str | None = None,
    misfire_threshold: Duration | None = None,
    catchup_limit: int | None = None,
    max_attempts: int | None = None,
    retry_backoff: Duration | None = None,
    timeout: Duration | None = None,
    kill_timeout: Duration | None = None,
    tracked: bool | None = None,
    jitter: Duration | None = None,
    parameters: Mapping[str, Any] | None = None,
    payload: Any = None,
    description: str | None = None,
    dst_gap: DstGap | str | None = None,
    dst_fold: DstFold | str | None = None,
    late_after: Duration | None = None,
    notify: Mapping[str, Any] | None = None,
    output_limit: int | str | None = None,
    long_running_after: Duration | None = None,
) -> Callable[[F], F]:
    """Schedule an ``@operation`` of an ``@service`` class (docs/behaviour.md#jobs keys).

    Arguments left at ``None`` are unset: a ``jobs.d`` table with the same ``id`` may set
    them, else the mode-based defaults apply. May be stacked to give one operation
    several schedules (each with its own ``id``).
    """
    given = {
        key: value
        for key, value in {
            "id": id,
            "cron": cron,
            "every": every,
            "anchor": anchor,
            "timezone": timezone,
            "enabled": enabled,
            "mode": mode,
            "overlap_policy": overlap_policy,
            "serial_group": serial_group,
            "misfire_policy": misfire_policy,
            "misfire_threshold": misfire_threshold,
            "catchup_limit": catchup_limit,
            "max_attempts": max_attempts,
            "retry_backoff": retry_backoff,
            "timeout": timeout,
            "kill_timeout": kill_timeout,
            "tracked": tracked,
            "jitter": jitter,
            "parameters": parameters,
            "payload": payload,
            "description": description,
            "dst_gap": dst_gap,
            "dst_fold": dst_fold,
            "late_after": late_after,
            "notify": notify,
            "output_limit": output_limit,
            "long_running_after": long_running_after,
        }.items()
        if value is not None
    }
    spec = CronJobSpec(values=given)

    def mark(fn: F) -> F:
        target = _function_of(fn)
        existing: tuple[CronJobSpec, ...] = getattr(target, CRON_JOBS_ATTR, ())
        # Decorators apply bottom-up; keep the order they are written in.
        setattr(target, CRON_JOBS_ATTR, (spec, *existing))
        return fn

    return mark


def _function_of(obj: Any) -> Any:
    """The plain function behind a staticmethod/classmethod (they are not callables we own)."""
    return getattr(obj, "__func__", obj)
