"""``slot_counts`` (the dashboard's strip) and ``list_executions(before=...)`` (the API's
cursor pages) on SQLite and PostgreSQL, through the store and the light reader alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import Store
from cronctl.store.reader import open_reader

START = datetime(2026, 12, 2, 13, 30, tzinfo=UTC)
SLOT = timedelta(minutes=30)


def _execution(store: Store, job: str, at: datetime, status: ExecutionStatus,
               attempt: int = 1) -> int:
    eid = store.try_insert_execution(job_id=job, occurrence_id=occurrence_id(job, at),
                                     scheduled_at=at, attempt=attempt, origin=Origin.CRON,
                                     node_id="n1", scope_node="n1", target="command: true")
    assert eid is not None
    if status is not ExecutionStatus.PENDING:
        store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.RUNNING)
        if status is not ExecutionStatus.RUNNING:
            store.transition(eid, ExecutionStatus.RUNNING, status)
    return eid


def test_slot_counts_bucket_by_half_hour_and_status(store: Store, store_url: str) -> None:
    rows = [
        ("a", START, ExecutionStatus.SUCCEEDED),  # slot 0: its first instant exactly
        ("a", START + timedelta(minutes=29, seconds=59, microseconds=999), ExecutionStatus.FAILED),
        ("a", START + SLOT, ExecutionStatus.SUCCEEDED),  # slot 1: a boundary is the next slot
        ("a", START + SLOT, ExecutionStatus.SUCCEEDED),
        ("a", START + 47 * SLOT + timedelta(minutes=10), ExecutionStatus.RUNNING),  # the last
        ("a", START - timedelta(microseconds=1), ExecutionStatus.SUCCEEDED),  # before: out
        ("a", START + 48 * SLOT, ExecutionStatus.SUCCEEDED),  # after: out
        ("b", START + 3 * SLOT, ExecutionStatus.DEAD_LETTER),
        ("c", START + 3 * SLOT, ExecutionStatus.SUCCEEDED),  # not asked for
    ]
    for k, (job, at, status) in enumerate(rows):
        _execution(store, job, at, status, attempt=k + 1)
    expected = {("a", 0): {"succeeded": 1, "failed": 1}, ("a", 1): {"succeeded": 2},
                ("a", 47): {"running": 1}, ("b", 3): {"dead_letter": 1}}
    assert store.slot_counts(["a", "b"], START, SLOT, 48) == expected
    reader = open_reader(store_url)
    assert reader is not None
    try:
        assert reader.slot_counts(["a", "b"], START, SLOT, 48) == expected
    finally:
        reader.close()
    assert store.slot_counts([], START, SLOT, 48) == {}
    assert store.slot_counts(["a"], START, SLOT, 1) == {("a", 0): {"succeeded": 1, "failed": 1}}


def test_before_continues_a_page_in_history_order(store: Store) -> None:
    at = START
    ids = [_execution(store, "a", at + timedelta(minutes=k // 2), ExecutionStatus.SUCCEEDED,
                      attempt=k + 1) for k in range(7)]
    whole = store.list_executions(job_id="a", limit=None)
    assert [r.id for r in whole] == sorted(ids, key=lambda i: (ids.index(i) // 2, i),
                                           reverse=True)
    pages = []
    before = None
    while True:
        page = store.list_executions(job_id="a", limit=3, before=before)
        pages += page
        if len(page) < 3:
            break
        before = (page[-1].scheduled_at, page[-1].id)
    assert [r.id for r in pages] == [r.id for r in whole]
    two = store.list_executions(job_id="a", limit=10, before=(whole[1].scheduled_at,
                                                               whole[1].id),
                                status=[ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED])
    assert [r.id for r in two] == [r.id for r in whole[2:]]
