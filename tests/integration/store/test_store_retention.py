"""The Store contract, retention: prune steps and passes, the maintenance lock, and the
space SQLite gives back. Every backend passes the same tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from conftest import StoreFactory

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id, open_store
from cronctl.store import migrate as mig
from cronctl.store.base import (
    NewExecution,
    PruneCounts,
    PrunePolicy,
    PruneProgress,
    SkipRun,
)
from cronctl.store.engine import make_engine
from cronctl.store.writerecords import PRUNE_LOCK

S = ExecutionStatus
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
FINAL = (S.SUCCEEDED, S.FAILED, S.ABANDONED, S.CANCELLED, S.DEAD_LETTER)


def policy(*, days: int = 30, keep_last: int = 3, skipped_days: int = 7) -> PrunePolicy:
    return PrunePolicy(executions_before=NOW - days * DAY, keep_last=keep_last,
                       skipped_before=NOW - skipped_days * DAY,
                       triggers_before=NOW - days * DAY)


def row(job: str, finished: datetime | None, *, status: ExecutionStatus = S.SUCCEEDED,
        planned: datetime | None = None, attempt: int = 1) -> NewExecution:
    at = planned or (finished - timedelta(seconds=5) if finished else NOW - 50 * DAY)
    return NewExecution(job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at,
                        attempt=attempt, origin=Origin.CRON, node_id="n1", scope_node=None,
                        status=status, started_at=at, created_at=at, finished_at=finished)


def seed(store: Store, rows: list[NewExecution], lines: int = 2) -> list[int]:
    ids = [i for i in store.insert_executions(rows) if i is not None]
    assert len(ids) == len(rows)
    store.append_logs([(eid, NOW, "INFO", f"{eid} line {n}") for eid in ids
                       for n in range(lines)])
    return ids


def left(store: Store, job: str) -> set[int]:
    return {r.id for r in store.list_executions(job_id=job, limit=None)}


def test_prune_keeps_what_the_policy_says(store: Store) -> None:
    # "a": one finished execution a day for 60 days, each of a final status in turn.
    a = seed(store, [row("a", NOW - d * DAY, status=FINAL[d % len(FINAL)])
                     for d in range(60)])
    # "b": only old ones; its newest 3 stay however old they are.
    b = seed(store, [row("b", NOW - (40 + d) * DAY) for d in range(6)])
    # "c": fewer than keep_last, all old: all kept.
    c = seed(store, [row("c", NOW - 90 * DAY), row("c", NOW - 91 * DAY)])
    # Live rows planned long ago are never pruned, whatever their age.
    live = seed(store, [row("a", None, status=S.RUNNING, planned=NOW - 80 * DAY),
                        row("b", None, status=S.PENDING, planned=NOW - 70 * DAY)])
    # An occurrence planned long ago that finished recently (a replay) ages by its end.
    [replayed] = seed(store, [row("b", NOW - DAY, planned=NOW - 200 * DAY)])
    # A row planned within the window that ended before it (a clock step): planned AND
    # ended before the cutoff is what goes.
    [odd] = seed(store, [row("c", NOW - 31 * DAY, planned=NOW - 29 * DAY)])
    counts = store.prune(policy())
    # a: the 30 that ended within 30 days (d = 0..29) stay, d = 30 is exactly the cutoff.
    assert left(store, "a") == set(a[:31]) | {live[0]}
    # b: the replayed one (by its end), the newest 3 by planned time, the pending one.
    assert left(store, "b") == {replayed, b[0], b[1], b[2], live[1]}
    assert left(store, "c") == set(c) | {odd}
    assert counts == PruneCounts(executions=29 + 3, log_lines=2 * (29 + 3))
    for eid in a[31:] + b[3:]:
        assert store.read_logs(eid) == []
    assert [x.message for x in store.read_logs(a[0])] == [f"{a[0]} line 0", f"{a[0]} line 1"]
    assert store.prune(policy()) == PruneCounts()  # a second pass deletes nothing more


def test_keep_last_is_by_planned_time_then_id_and_zero_keeps_none(store: Store) -> None:
    at = NOW - 40 * DAY
    # Five attempts of one occurrence: the same planned time; newest = highest id.
    tied = seed(store, [row("t", at + timedelta(minutes=n), planned=at, attempt=n + 1)
                        for n in range(5)])
    # Ended in the opposite order of their planned times: planned time decides.
    later = seed(store, [row("u", at - timedelta(minutes=n), planned=at + timedelta(hours=n))
                         for n in range(4)])
    assert store.prune(policy(keep_last=2)).executions == 3 + 2
    assert left(store, "t") == set(sorted(tied)[-2:])
    assert left(store, "u") == set(later[2:])
    assert store.prune(policy(keep_last=0)).executions == 4
    assert left(store, "t") == left(store, "u") == set()


def test_dry_run_counts_exactly_and_writes_nothing(store: Store) -> None:
    seed(store, [row(f"j{k}", NOW - d * DAY) for k in range(3) for d in range(0, 60, 3)],
         lines=3)
    store.record_skips([SkipRun("j0", "overlap", NOW - 9 * DAY, NOW - 8 * DAY, 2, "n1")])
    before = {job: left(store, job) for job in ("j0", "j1", "j2")}
    dry = store.prune(policy(), dry_run=True)
    assert dry == PruneCounts(executions=3 * 9, skipped=1, log_lines=3 * 9 * 3)
    assert {job: left(store, job) for job in before} == before
    assert len(store.list_skips(limit=None)) == 1
    assert store.prune(policy()) == dry
    assert store.prune(policy(), dry_run=True) == PruneCounts()


def test_small_batches_never_delete_more_than_asked(store: Store) -> None:
    old = NOW - 40 * DAY
    ids = seed(store, [row("m", old - timedelta(minutes=n)) for n in range(12)], lines=2)
    seed(store, [row("n", old - timedelta(minutes=n, seconds=30)) for n in range(12)], lines=1)
    # One execution with more lines than a batch: deleted over several steps, lines first.
    store.append_logs([(ids[-1], NOW, "INFO", f"extra {n}") for n in range(9)])
    at: PruneProgress | None = PruneProgress()
    total = PruneCounts()
    steps = 0
    while at is not None:
        step = store.prune_step(policy(keep_last=1), at, batch=4)
        assert step.counts.total <= 4
        total += step.counts
        at = step.next
        steps += 1
        assert steps < 100
    assert total == PruneCounts(executions=22, log_lines=11 * 2 + 9 + 11)
    assert left(store, "m") == {ids[0]}
    assert len(left(store, "n")) == 1


def test_skip_records_and_trigger_requests(store: Store) -> None:
    store.record_skips([
        SkipRun("s", "overlap", NOW - 20 * DAY, NOW - 10 * DAY, 10, "n1"),  # old: deleted
        SkipRun("s", "paused", NOW - 9 * DAY, NOW - 2 * DAY, 7, "n1"),  # reaches in: kept
        SkipRun("s", "misfire", NOW - DAY, NOW - DAY, 1, "n1", scope_node="n1"),
    ])
    old_done = store.enqueue_trigger("t", now=NOW - 40 * DAY)
    old_open = store.enqueue_trigger("t", Origin.REPLAY, scheduled_at=NOW - 41 * DAY,
                                     now=NOW - 40 * DAY)
    new_done = store.enqueue_trigger("t", now=NOW - DAY)
    assert old_done and old_open and new_done
    store.complete_trigger(old_done, execution_id=None)
    store.complete_trigger(new_done, execution_id=None)
    counts = store.prune(policy(), batch=1)
    assert counts == PruneCounts(skipped=1, trigger_requests=1)
    assert sorted(r.reason for r in store.list_skips(limit=None)) == ["misfire", "paused"]
    assert store.get_trigger(old_done) is None
    assert store.get_trigger(old_open) is not None  # not done: kept, whatever its age
    assert store.get_trigger(new_done) is not None


def test_prune_of_an_empty_store_and_bad_arguments(store: Store) -> None:
    assert store.prune(policy()) == PruneCounts()
    step = store.prune_step(policy())
    assert step.next == PruneProgress("skipped")
    with pytest.raises(ValueError, match="phase"):
        store.prune_step(policy(), PruneProgress("nope"))
    with pytest.raises(ValueError, match="batch"):
        store.prune_step(policy(), batch=0)
    with pytest.raises(ValueError, match="aware"):
        store.prune(PrunePolicy(datetime(2026, 1, 1), 1, NOW, NOW))


def run_pass(store: Store, p: PrunePolicy, *, dry_run: bool = False, batch: int = 2000
             ) -> tuple[PruneCounts, int]:
    """A pass step by step (at most 500 steps): its counts and how many steps it took."""
    at: PruneProgress | None = PruneProgress()
    total, steps = PruneCounts(), 0
    while at is not None:
        step = store.prune_step(p, at, dry_run=dry_run, batch=batch)
        total, at, steps = total + step.counts, step.next, steps + 1
        assert steps <= 500, at
    return total, steps


def test_a_pass_walks_the_rows_once_oldest_first(store: Store) -> None:
    # 40 jobs with 10 old rows each; keep_last 3 keeps the 120 newest: 280 go, in batches
    # of 20 rows (10 executions with their line) filled across jobs.
    for k in range(40):
        seed(store, [row(f"j{k:02d}", NOW - (40 + n) * DAY + timedelta(minutes=k))
                     for n in range(10)], lines=1)
    assert run_pass(store, policy(), dry_run=True) == (
        PruneCounts(executions=280, log_lines=280), 3)
    counts, steps = run_pass(store, policy(), batch=20)
    assert counts == PruneCounts(executions=280, log_lines=280)
    assert steps == 28 + 7 + 2  # 7 steps walk past the 120 kept ones; skips, triggers
    assert all(len(left(store, f"j{k:02d}")) == 3 for k in range(40))


def test_one_node_at_a_time_and_a_dead_node_never_wedges_it(store: Store) -> None:
    store.register_node("n1", "h", 1, NOW, ttl=timedelta(seconds=30))
    store.register_node("n2", "h", 2, NOW, ttl=timedelta(seconds=30))
    assert store.take_maintenance_lock(PRUNE_LOCK, node_id="n1", now=NOW)
    assert store.take_maintenance_lock(PRUNE_LOCK, node_id="n1", now=NOW)  # still ours
    assert not store.take_maintenance_lock(PRUNE_LOCK, node_id="n2", now=NOW)
    assert not store.release_maintenance_lock(PRUNE_LOCK, node_id="n2")
    assert [(g.key, g.node_id) for g in store.guard_locks()] == [(PRUNE_LOCK, "n1")]
    assert store.release_maintenance_lock(PRUNE_LOCK, node_id="n1")
    assert store.take_maintenance_lock(PRUNE_LOCK, node_id="n2", now=NOW)
    # n2 is gone holding it (its row removed: liveness judged it dead, see
    # test_store_liveness.py for how on each database): the live node releases the locks
    # of nodes that are gone.
    store.unregister_node("n2")
    assert store.release_stale_locks(NOW + timedelta(minutes=5), timedelta(seconds=30)) == 1
    assert store.take_maintenance_lock(PRUNE_LOCK, node_id="n1", now=NOW)
    assert store.release_locks("n1") == 1  # and a node that stops drops it too
    assert store.guard_locks() == []


def test_rows_written_already_finished_keep_their_end(store: Store) -> None:
    [eid] = seed(store, [row("f", NOW - DAY)], lines=0)
    record = store.get_execution(eid)
    assert record is not None and record.finished_at == NOW - DAY
    assert record.status is S.SUCCEEDED


def test_append_logs_over_many_executions_in_one_batch(store: Store) -> None:
    ids = seed(store, [row("l", NOW - timedelta(seconds=n)) for n in range(2500)], lines=0)
    batch = [(eid, NOW, "INFO", f"{eid}:{n}") for n in range(2) for eid in ids]
    store.append_logs(batch)
    store.append_logs([(ids[-1], NOW, "INFO", "again")])
    assert [(x.seq, x.message) for x in store.read_logs(ids[0])] == [
        (1, f"{ids[0]}:0"), (2, f"{ids[0]}:1")]
    assert [x.seq for x in store.read_logs(ids[-1])] == [1, 2, 3]


def _pages(path: Path) -> tuple[int, int]:
    """(page_count, freelist_count) of the SQLite file, as committed."""
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA auto_vacuum").scalar_one() == 2  # incremental
            return (int(conn.exec_driver_sql("PRAGMA page_count").scalar_one()),
                    int(conn.exec_driver_sql("PRAGMA freelist_count").scalar_one()))
    finally:
        engine.dispose()


def test_reclaim_space(store: Store, backend: str, tmp_path: Path) -> None:
    if backend != "sqlite":
        assert store.reclaim_space() == 0
        return
    path = tmp_path / "state.db"
    seed(store, [row("v", NOW - 40 * DAY - timedelta(seconds=n)) for n in range(3000)],
         lines=3)
    store.prune(policy(keep_last=0))
    pages, free = _pages(path)
    assert free > 200
    assert store.reclaim_space(max_pages=50) == 50
    assert _pages(path) == (pages - 50, free - 50)
    pages, free = _pages(path)
    keep = int((pages - free) * 0.1)
    assert store.reclaim_space(max_pages=10**6, keep_fraction=0.1) == free - keep
    assert _pages(path) == (pages - (free - keep), keep)
    assert store.reclaim_space(keep_fraction=0.1) == 0  # nothing beyond the slack
    assert store.reclaim_space(max_pages=10**6) == keep
    assert _pages(path)[1] == 0


def test_upgrade_to_0004_gives_finished_rows_an_end(store_url: str, backend: str,
                                                    store_factory: StoreFactory) -> None:
    engine = make_engine(store_url)
    try:
        with engine.begin() as conn:
            command.upgrade(mig.alembic_config(conn), "0003")
            conn.execute(sa.text(
                "INSERT INTO job_executions (job_id, occurrence_id, scheduled_at, attempt, "
                "scope, node_id, origin, status, target, created_at, started_at, "
                "cancel_requested) VALUES ('u', 'o1', :at, 1, '', 'n1', 'cron', 'failed', '', "
                ":at, :start, false), ('u', 'o2', :at, 1, '', 'n1', 'cron', 'running', '', "
                ":at, :start, false)"),
                {"at": _ts(backend, NOW - 50 * DAY), "start": _ts(backend, NOW - 49 * DAY)})
    finally:
        engine.dispose()
    store = store_factory()
    rows = {r.occurrence_id: r for r in store.list_executions(job_id="u")}
    assert rows["o1"].finished_at == NOW - 49 * DAY
    assert rows["o2"].finished_at is None


def _ts(backend: str, at: datetime) -> object:
    from cronctl.ids import utc_iso

    return utc_iso(at) if backend == "sqlite" else at


def test_every_statement_of_a_pass_uses_an_index(tmp_path: Path) -> None:
    """SQLite's EXPLAIN QUERY PLAN of each statement a pass runs (traced with its values):
    no full scan of a table and no sort, however large the tables grow. (PostgreSQL's
    plans depend on its statistics: they were checked by hand, with and without.)"""
    store = open_store(f"sqlite:///{tmp_path / 'plans.db'}", node_id="n1")
    try:
        _explain_a_pass(store)
    finally:
        store.close()


def _explain_a_pass(store: Store) -> None:
    seed(store, [row(f"j{k}", NOW - d * DAY) for k in range(3) for d in range(0, 60, 5)])
    store.record_skips([SkipRun("j0", "overlap", NOW - 9 * DAY, NOW - 8 * DAY, 2, "n1")])
    done = store.enqueue_trigger("j0", now=NOW - 40 * DAY)
    assert done is not None
    store.complete_trigger(done)
    engine = store.engine  # type: ignore[attr-defined]
    traced: list[str] = []
    engine.dispose()
    sa.event.listen(engine, "connect",
                    lambda dbapi, _record: dbapi.set_trace_callback(traced.append))
    store.prune(policy(), dry_run=True)
    store.prune(policy(), batch=5)
    statements = {s for s in traced
                  if s.split()[0].upper() in ("SELECT", "DELETE", "INSERT", "UPDATE")}
    assert any(s.startswith("DELETE FROM job_executions") for s in statements)
    tables = {"job_executions", "job_logs", "skip_records", "trigger_requests", "e", "l"}
    with engine.connect() as conn:
        for sql in statements:
            plan = [r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]
            for step in plan:
                words = step.split()
                assert not (words[0] == "SCAN" and words[1] in tables), (sql, plan)
                assert "TEMP B-TREE" not in step, (sql, plan)
