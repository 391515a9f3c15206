"""Helpers for core tests: jobs, instants, and picking actions out of decisions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from cronctl.core import Action, Decision, Skip
from cronctl.core.timing import ScheduleLike
from cronctl.jobs.model import CommandTarget, JobDefinition

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
A = TypeVar("A")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def job(job_id: str = "j", *, every: float | None = 1, cron: str | None = None,
        **kw: Any) -> JobDefinition:
    base = JobDefinition(id=job_id, target=CommandTarget(("true",)),
                         every=None if cron else timedelta(seconds=every or 1), cron=cron)
    return replace(base, **kw)


def of(decision: Decision | Iterable[Action], kind: type[A]) -> list[A]:
    actions = decision.actions if isinstance(decision, Decision) else decision
    return [a for a in actions if isinstance(a, kind)]


def skipped_instants(skips: Iterable[Skip], schedule: ScheduleLike) -> list[datetime]:
    """The planned instants ``skips`` cover, a run expanded with the job's schedule."""
    out: list[datetime] = []
    for s in skips:
        if s.last is None:
            out.append(s.planned)
            continue
        got = schedule.between(s.planned - timedelta(microseconds=1), s.last,
                               limit=s.count + 1)
        assert len(got) == s.count and got[0] == s.planned and got[-1] == s.last, s
        out += got
    return out
