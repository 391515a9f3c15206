"""Retention at scale (issue 10): 200,000 finished executions over 60 days with their
logs, seeded through the store's own batch paths, on SQLite and PostgreSQL. A prune
keeps exactly what the policy says (age, keep_last, running and pending untouched) and
a second one deletes nothing more."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store, occurrence_id
from cronctl.store.base import NewExecution, PruneCounts, PrunePolicy

pytestmark = pytest.mark.slow

S = ExecutionStatus
NOW = datetime(2026, 6, 1, tzinfo=UTC)
DAY = timedelta(days=1)
JOBS = 100
PER_JOB = 2_000  # 200,000 in all
OLD_ONLY = 10  # the last 10 jobs stopped 35 days ago: only keep_last saves some
KEEP_LAST = 20
CHATTY = 50  # old executions with 30 log lines instead of one
FINAL = (S.SUCCEEDED, S.FAILED, S.ABANDONED, S.CANCELLED, S.DEAD_LETTER)


def end_of(job: int, n: int) -> datetime:
    """The n-th execution of the job ends at; spread over 60 days (25 for old jobs)."""
    if job >= JOBS - OLD_ONLY:
        return NOW - 60 * DAY + n * (25 * DAY / PER_JOB) + timedelta(seconds=job)
    return NOW - 60 * DAY + n * (60 * DAY / PER_JOB) + timedelta(seconds=job)


def new_row(job: str, planned: datetime, status: ExecutionStatus,
            finished: datetime | None) -> NewExecution:
    return NewExecution(job_id=job, occurrence_id=occurrence_id(job, planned),
                        scheduled_at=planned, attempt=1, origin=Origin.CRON, node_id="n1",
                        scope_node=None, target="python:jobs:work", status=status,
                        started_at=planned, created_at=planned, finished_at=finished)


def seed(store: Store) -> tuple[dict[int, tuple[str, datetime]], set[int], dict[int, int]]:
    """Finished rows ``id -> (job, end)``, the live row ids, log lines per row id."""
    finished: dict[int, tuple[str, datetime]] = {}
    lines: dict[int, int] = {}
    for job in range(JOBS):
        name = f"job{job:03d}"
        rows = [new_row(name, end_of(job, n) - timedelta(seconds=3), FINAL[n % len(FINAL)],
                        end_of(job, n)) for n in range(PER_JOB)]
        ids = store.insert_executions(rows)
        for eid, row in zip(ids, rows, strict=True):
            assert eid is not None and row.finished_at is not None
            finished[eid] = (name, row.finished_at)
    live_rows = [new_row(f"job{k:03d}", NOW - 50 * DAY + timedelta(minutes=k),
                         S.RUNNING if k % 2 else S.PENDING, None) for k in range(20)]
    live = {i for i in store.insert_executions(live_rows) if i is not None}
    every = sorted(finished) + sorted(live)
    for start in range(0, len(every), 20_000):
        chunk = every[start:start + 20_000]
        store.append_logs([(eid, NOW, "INFO", "done") for eid in chunk])
    chatty = sorted(finished)[:CHATTY]
    store.append_logs([(eid, NOW, "INFO", f"more {n}") for eid in chatty for n in range(29)])
    for eid in every:
        lines[eid] = 30 if eid in chatty else 1
    return finished, live, lines


def expected_kept(finished: dict[int, tuple[str, datetime]], cutoff: datetime) -> set[int]:
    """Ended at or after the cutoff, or among the newest 20 of the job (planned 3 s before
    its end, so newest by planned time is newest by end)."""
    by_job: dict[str, list[tuple[datetime, int]]] = {}
    for eid, (job, end) in finished.items():
        by_job.setdefault(job, []).append((end, eid))
    kept: set[int] = set()
    for rows in by_job.values():
        rows.sort()
        kept.update(eid for _, eid in rows[-KEEP_LAST:])
        kept.update(eid for end, eid in rows if end >= cutoff)
    return kept


def remaining(store: Store) -> tuple[set[int], int, int]:
    """Row ids left, log lines left, log lines whose execution is gone."""
    engine: Any = store.engine  # type: ignore[attr-defined]
    with engine.connect() as conn:
        ids = set(conn.execute(sa.text("SELECT id FROM job_executions")).scalars())
        lines = conn.execute(sa.text("SELECT COUNT(*) FROM job_logs")).scalar_one()
        orphans = conn.execute(sa.text(
            "SELECT COUNT(*) FROM job_logs l WHERE NOT EXISTS "
            "(SELECT 1 FROM job_executions e WHERE e.id = l.execution_id)")).scalar_one()
    return ids, int(lines), int(orphans)


@pytest.mark.timeout(600)  # seeding 200k rows took 95 s here under -n 4: no hang
def test_prune_200k_executions_keeps_exactly_the_policy(store: Store) -> None:
    finished, live, lines = seed(store)
    assert len(finished) == JOBS * PER_JOB
    cutoff = NOW - 30 * DAY
    policy = PrunePolicy(executions_before=cutoff, keep_last=KEEP_LAST,
                         skipped_before=NOW - 7 * DAY, triggers_before=cutoff)
    kept = expected_kept(finished, cutoff)
    gone = set(finished) - kept
    expected = PruneCounts(executions=len(gone), log_lines=sum(lines[e] for e in gone))
    assert len(gone) > 100_000  # most of it is older than 30 days

    assert store.prune(policy, dry_run=True) == expected
    assert store.prune(policy) == expected
    ids, left_lines, orphans = remaining(store)
    assert ids == kept | live
    assert left_lines == sum(lines[e] for e in kept | live) and orphans == 0
    for job in range(JOBS - OLD_ONLY, JOBS):  # stopped long ago: their newest 20 stay
        assert len([e for e in ids if finished.get(e, ("",))[0] == f"job{job:03d}"]) == 20

    assert store.prune(policy) == PruneCounts()  # a second pass deletes nothing more
    assert remaining(store)[0] == kept | live
