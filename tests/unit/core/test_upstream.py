"""Dependents in the core (SPEC section 8): a parent occurrence's final outcome from its
rows, and what becomes of the dependent's occurrence at ``t``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from core_helpers import job

from cronctl.core import SchedulerCore
from cronctl.core.dependencies import (
    ParentFact,
    ParentState,
    Verdict,
    occurrence_outcome,
    upstream_verdict,
)
from cronctl.jobs.model import AfterEdge, AfterOutcome, ExecutionStatus

T = datetime(2026, 12, 3, 4, 0, tzinfo=UTC)
S = ExecutionStatus


@dataclass
class Row:
    status: ExecutionStatus
    attempt: int
    node_id: str = "a"


def test_final_outcome_waits_for_retries() -> None:
    assert occurrence_outcome([], 3) == ParentFact(ParentState.NONE)
    assert occurrence_outcome([Row(S.RUNNING, 1)], 3).state is ParentState.RUNNING
    # a failed attempt with attempts left: a retry follows, not final
    assert occurrence_outcome([Row(S.FAILED, 1)], 3).state is ParentState.RUNNING
    assert occurrence_outcome([Row(S.FAILED, 1), Row(S.SUCCEEDED, 2)], 3) == ParentFact(
        ParentState.FINAL, "succeeded")
    assert occurrence_outcome([Row(S.FAILED, 1), Row(S.DEAD_LETTER, 2)], 2) == ParentFact(
        ParentState.FINAL, "dead_letter")
    assert occurrence_outcome([Row(S.CANCELLED, 1)], 3) == ParentFact(
        ParentState.FINAL, "cancelled")


def test_every_instance_parent_needs_every_node() -> None:
    rows = [Row(S.SUCCEEDED, 1, "a"), Row(S.RUNNING, 1, "b")]
    assert occurrence_outcome(rows, 1).state is ParentState.RUNNING
    rows = [Row(S.SUCCEEDED, 1, "a"), Row(S.DEAD_LETTER, 1, "b")]
    assert occurrence_outcome(rows, 1) == ParentFact(ParentState.FINAL, "dead_letter")


def _child(*edges: AfterEdge, timeout: timedelta = timedelta(hours=24)):  # type: ignore[no-untyped-def]
    return job("child", cron="0 0 4 * * *", after=edges, after_timeout=timeout)


def test_fires_when_every_parent_matches() -> None:
    child = _child(AfterEdge("extract"), AfterEdge("load", AfterOutcome.ANY))
    facts = {"extract": ParentFact(ParentState.FINAL, "succeeded"),
             "load": ParentFact(ParentState.FINAL, "cancelled")}
    assert upstream_verdict(child, T, facts, T).verdict is Verdict.FIRE


def test_skips_name_the_parent_and_its_outcome() -> None:
    child = _child(AfterEdge("extract"))
    got = upstream_verdict(child, T, {"extract": ParentFact(ParentState.FINAL, "dead_letter")},
                           T)
    assert (got.verdict, got.detail) == (Verdict.SKIP,
                                         "upstream extract@2026-12-03T04:00:00Z failed")
    got = upstream_verdict(child, T, {"extract": ParentFact(ParentState.SKIPPED, "calendar")},
                           T)
    assert got.detail == "upstream extract@2026-12-03T04:00:00Z was skipped (calendar)"
    on_failure = _child(AfterEdge("extract", AfterOutcome.FAILED))
    got = upstream_verdict(on_failure, T,
                           {"extract": ParentFact(ParentState.FINAL, "succeeded")}, T)
    assert got.detail == ("upstream extract@2026-12-03T04:00:00Z succeeded "
                          "(after = 'extract:failed')")


def test_waits_until_after_timeout() -> None:
    child = _child(AfterEdge("extract"), timeout=timedelta(hours=1))
    running = {"extract": ParentFact(ParentState.RUNNING, "running")}
    got = upstream_verdict(child, T, running, T + timedelta(minutes=59))
    assert (got.verdict, got.detail) == (
        Verdict.WAIT, "waiting on extract@2026-12-03T04:00:00Z (running)")
    got = upstream_verdict(child, T, running, T + timedelta(minutes=61))
    assert got.verdict is Verdict.SKIP
    assert got.detail == ("upstream extract@2026-12-03T04:00:00Z has not ended within "
                          "after_timeout = 1h (running)")


def test_core_never_fires_a_dependent_on_its_own() -> None:
    core = SchedulerCore([_child(AfterEdge("extract"))])
    core.start(T - timedelta(seconds=1))
    assert core.next_wake() is None
    assert core.tick(T + timedelta(days=2)).actions == ()
