"""Dependents (docs/behaviour.md#spread-calendars-and-dependencies), as pure functions of what the
store holds and ``now``.

For each planned instant ``t`` of its parents' schedule a dependent has one occurrence.
It fires once every parent's occurrence at ``t`` has its FINAL outcome (after its
retries) and each matches its ``after`` entry; a parent that ended otherwise, or whose
instant was skipped (any skip record: overlap, paused, misfire, calendar, upstream ...)
makes it a skip record, reason ``upstream``, naming that parent and its outcome; so does
a parent that has not ended within ``after_timeout`` of ``t``. Until then it waits.

The runtime gathers a :class:`ParentFact` per parent (:func:`occurrence_outcome` reads
the parent's execution rows) and asks :func:`upstream_verdict`; ``why`` asks the same."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from cronctl.durations import format_duration
from cronctl.jobs.model import AfterOutcome, ExecutionStatus, JobDefinition

_FAILED = frozenset({ExecutionStatus.DEAD_LETTER, ExecutionStatus.FAILED,
                     ExecutionStatus.ABANDONED})
_RETRYABLE = frozenset({ExecutionStatus.FAILED, ExecutionStatus.ABANDONED})


class ParentState(enum.StrEnum):
    FINAL = "final"  # the occurrence ended: ``status`` is its final status
    RUNNING = "running"  # an attempt runs, waits to start, or a retry follows
    SKIPPED = "skipped"  # a skip record covers the instant: ``status`` is its reason
    NONE = "none"  # nothing recorded yet (not due, or not handled yet)


@dataclass(frozen=True)
class ParentFact:
    state: ParentState
    status: str | None = None  # the final status (FINAL) or the skip reason (SKIPPED)


class AttemptRow(Protocol):
    @property
    def status(self) -> ExecutionStatus: ...
    @property
    def attempt(self) -> int: ...
    @property
    def node_id(self) -> str: ...


def occurrence_outcome(rows: Iterable[AttemptRow], max_attempts: int) -> ParentFact:
    """The outcome of one occurrence from its execution rows: each node's newest attempt
    (an every_instance parent runs on each node) must be final and not followed by a
    retry; the outcome is ``succeeded`` when every node's is, else the first other one."""
    newest: dict[str, AttemptRow] = {}
    for row in rows:
        seen = newest.get(row.node_id)
        if seen is None or row.attempt >= seen.attempt:
            newest[row.node_id] = row
    if not newest:
        return ParentFact(ParentState.NONE)
    statuses: list[ExecutionStatus] = []
    for row in newest.values():
        if not row.status.is_final or (row.status in _RETRYABLE
                                       and row.attempt < max_attempts):
            return ParentFact(ParentState.RUNNING, row.status.value)
        statuses.append(row.status)
    others = [s for s in statuses if s is not ExecutionStatus.SUCCEEDED]
    final = others[0] if others else ExecutionStatus.SUCCEEDED
    if final in _FAILED:
        final = ExecutionStatus.DEAD_LETTER  # every attempt of it failed
    return ParentFact(ParentState.FINAL, final.value)


def matches(outcome: AfterOutcome, status: str) -> bool:
    if outcome is AfterOutcome.ANY:
        return True
    if outcome is AfterOutcome.FAILED:
        return status in {s.value for s in _FAILED}
    return status == ExecutionStatus.SUCCEEDED.value


class Verdict(enum.StrEnum):
    FIRE = "fire"
    SKIP = "skip"
    WAIT = "wait"


@dataclass(frozen=True)
class Upstream:
    """What becomes of the dependent's occurrence at ``t``: ``detail`` names the parent
    (``upstream extract@2026-12-03T07:00:00Z failed``, ``waiting on extract@...``)."""

    verdict: Verdict
    detail: str
    parent: str | None = None


def at_text(parent: str, t: datetime) -> str:
    return f"{parent}@{t.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"


def _ended_as(status: str) -> str:
    return "failed" if status == ExecutionStatus.DEAD_LETTER.value else status


def upstream_verdict(job: JobDefinition, t: datetime, facts: Mapping[str, ParentFact],
                     now: datetime, *, waited_from: datetime | None = None) -> Upstream:
    """The dependent ``job``'s occurrence at ``t``, given each parent's fact at ``t``.
    ``after_timeout`` counts from ``t``, or from ``waited_from`` (a chained replay of an
    old instant waits from when it was asked for)."""
    waiting: list[tuple[str, ParentFact]] = []
    for edge in job.after:
        fact = facts.get(edge.job_id, ParentFact(ParentState.NONE))
        where = at_text(edge.job_id, t)
        if fact.state is ParentState.SKIPPED:
            return Upstream(Verdict.SKIP, f"upstream {where} was skipped ({fact.status})",
                            edge.job_id)
        if fact.state is ParentState.FINAL:
            assert fact.status is not None
            if not matches(edge.outcome, fact.status):
                want = "" if edge.outcome is AfterOutcome.SUCCEEDED else (
                    f" (after = {str(edge)!r})")
                return Upstream(Verdict.SKIP,
                                f"upstream {where} {_ended_as(fact.status)}{want}",
                                edge.job_id)
            continue
        waiting.append((edge.job_id, fact))
    if not waiting:
        names = ", ".join(at_text(e.job_id, t) for e in job.after)
        return Upstream(Verdict.FIRE, f"upstream {names} ended as required")
    parent, fact = waiting[0]
    state = f" ({fact.status})" if fact.state is ParentState.RUNNING and fact.status else (
        " (nothing recorded yet)" if fact.state is ParentState.NONE else "")
    if now - (t if waited_from is None else waited_from) > job.after_timeout:
        return Upstream(Verdict.SKIP, f"upstream {at_text(parent, t)} has not ended within "
                                      f"after_timeout = {format_duration(job.after_timeout)}"
                                      f"{state}", parent)
    more = f" and {len(waiting) - 1} more" if len(waiting) > 1 else ""
    return Upstream(Verdict.WAIT, f"waiting on {at_text(parent, t)}{state}{more}", parent)


__all__ = ["ParentFact", "ParentState", "Upstream", "Verdict", "at_text", "matches",
           "occurrence_outcome", "upstream_verdict"]
