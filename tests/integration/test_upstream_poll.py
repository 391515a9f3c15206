"""The dependents' poll (``cronctl.runtime.upstream``) against a real SQLite store, with
a fixed clock: a parent occurrence that runs long holds back only the cursor, never the
decisions of the instants after it, also beyond one poll's window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.ids import occurrence_id
from cronctl.jobs.model import (
    AfterEdge,
    CommandTarget,
    ExecutionStatus,
    JobDefinition,
    Mode,
    Origin,
)
from cronctl.runtime import upstream as upstream_module
from cronctl.runtime.upstream import Upstream
from cronctl.store import open_store
from cronctl.store.writerecords import NewExecution, SkipRun

T0 = datetime(2026, 12, 3, 6, 0, tzinfo=UTC)
S = timedelta(seconds=1)
EXTRACT = JobDefinition(id="extract", target=CommandTarget(("true",)), every=S,
                        mode=Mode.SINGLE_INSTANCE)
TRANSFORM = JobDefinition(id="transform", target=CommandTarget(("true",)), every=S,
                          after=(AfterEdge("extract"),))


def test_a_long_parent_occurrence_holds_back_only_the_cursor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_module, "WINDOW", 5)
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    try:
        store.save_definitions([EXTRACT, TRANSFORM])
        store.advance_cursor("transform", T0)  # the dependent was first seen at T0
        # extract@T0+1s still runs; every later instant was skipped (overlap)
        first = T0 + S
        store.insert_executions([NewExecution(
            "extract", occurrence_id("extract", first), first, 1, Origin.CRON, "n1", None,
            status=ExecutionStatus.RUNNING, started_at=first)])
        store.record_skips([SkipRun("extract", "overlap", first + S, first + 20 * S, 20,
                                    "n1")])
        now = [T0 + 21 * S]
        poll = Upstream(store, node_id="n1", clock=lambda: now[0],
                        jobs=lambda: (EXTRACT, TRANSFORM))
        for _ in range(6):  # 20 instants after the waiting one: a few windows of 5
            poll.poll()
        skipped = sorted(at for run in store.list_skips(job_id="transform", limit=None)
                         for at in [run.first_at])
        assert skipped == [first + k * S for k in range(1, 21)]
        state = store.get_schedule("transform")
        assert state is not None and state.cursor == first - timedelta(microseconds=1)
        assert store.take_triggers("n1") == []  # nothing to run yet
    finally:
        store.close()


def test_a_new_dependent_is_judged_from_the_scheduler_start_not_its_first_poll(
        tmp_path: Path) -> None:
    """The first poll comes after the start (its definitions may not even be saved yet):
    a parent instant between the two is still judged, so the dependent waits on it and
    runs once it ended, instead of being left without a record (``why``: "missed")."""
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    try:
        started = T0 + timedelta(milliseconds=900)
        first = T0 + S  # extract@first fired before the dependents' first poll
        store.insert_executions([NewExecution(
            "extract", occurrence_id("extract", first), first, 1, Origin.CRON, "n1", None,
            status=ExecutionStatus.RUNNING, started_at=first)])
        now = [first + timedelta(milliseconds=400)]
        poll = Upstream(store, node_id="n1", clock=lambda: now[0],
                        jobs=lambda: (EXTRACT, TRANSFORM))
        poll.started(started)
        poll.poll()
        state = store.get_schedule("transform")
        assert state is not None and state.cursor is not None
        assert state.cursor < first  # extract@first is waited on, not passed over
        [running] = store.list_executions(job_id="extract", limit=None)
        store.transition(running.id, ExecutionStatus.RUNNING, ExecutionStatus.SUCCEEDED,
                         finished_at=now[0])
        now[0] += S
        poll.poll()
        [request] = store.take_triggers("n1")
        assert (request.job_id, request.scheduled_at) == ("transform", first)
    finally:
        store.close()


def test_a_dependent_added_later_starts_at_its_first_poll(tmp_path: Path) -> None:
    """A dependent the scheduler did not have at its start (a reload added it) and that no
    scheduler saved yet: no catch-up of instants before it existed."""
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", node_id="n1")
    try:
        now = [T0 + 10 * S]
        jobs: list[JobDefinition] = [EXTRACT]
        poll = Upstream(store, node_id="n1", clock=lambda: now[0], jobs=lambda: tuple(jobs))
        poll.started(T0)
        jobs.append(TRANSFORM)
        poll.poll()
        state = store.get_schedule("transform")
        assert state is not None and state.cursor == now[0]
    finally:
        store.close()
