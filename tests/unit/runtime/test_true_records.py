"""What the record says of an attempt taken over (docs/liveness.md): the lost row names
what is known and by which rule its node was judged dead; a late final status whose
attempt ran beside its successor marks the occurrence concurrent_after_partition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cronctl.ids import CONCURRENT_AFTER_PARTITION, anomaly_of
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.runtime.fire.batches import concurrent_note
from cronctl.runtime.liveness import Liveness
from cronctl.store.base import ExecutionRecord, NodeRecord

T0 = datetime(2026, 12, 7, 9, 22, 1, tzinfo=UTC)


def row(eid: int, attempt: int, node: str, started: datetime | None,
        finished: datetime | None = None) -> ExecutionRecord:
    return ExecutionRecord(
        id=eid, job_id="solo", occurrence_id="occ", scheduled_at=T0, attempt=attempt,
        origin=Origin.CRON, status=ExecutionStatus.RUNNING, node_id=node, scope_node=None,
        fencing_token=attempt, target="command", created_at=T0, started_at=started,
        finished_at=finished)


def test_two_attempts_that_overlapped_are_marked() -> None:
    first = row(1, 1, "n1", T0)
    second = row(2, 2, "n2", T0 + timedelta(seconds=2))
    note = concurrent_note(first, T0 + timedelta(seconds=5), [second])
    assert note == (f"{CONCURRENT_AFTER_PARTITION}: attempt 1 ran on node n1 until "
                    "2026-12-07T09:22:06.000000Z, beside attempt 2 (exec=2, node n2) started "
                    "at 2026-12-07T09:22:03.000000Z")
    assert anomaly_of(f"lost: ...; {note}") == CONCURRENT_AFTER_PARTITION


def test_an_attempt_that_ended_before_its_successor_started_is_not() -> None:
    first = row(1, 1, "n1", T0)
    second = row(2, 2, "n2", T0 + timedelta(seconds=2))
    assert concurrent_note(first, T0 + timedelta(seconds=1.9), [second]) is None
    assert concurrent_note(row(1, 1, "n1", None), T0 + timedelta(seconds=9), [second]) is None
    assert anomaly_of("lost: node n1 lost the database at ...") is None


class _PgStore:
    beat_interval: Any = 0.5


def _liveness(store: Any) -> Liveness:
    return Liveness(store, node_id="n2", ttl=timedelta(seconds=15), beat_every=0.5,
                    clock=lambda: T0, jobs=dict, heartbeat=lambda: None,
                    recover=lambda rows, ends: None, unavailable=lambda exc: None,
                    down=lambda: False)


def test_the_lost_error_says_which_rule_took_the_node_over() -> None:
    live = _liveness(_PgStore())
    node = NodeRecord("n1", "host-1", 42, T0 - timedelta(hours=1), T0 - timedelta(seconds=2))
    assert live.lost_reason(node, T0) == (
        "lost: node n1 lost the database at 2026-12-07T09:21:59Z (its session and lock ended: "
        "killed, crashed or cut off); its outcome is unknown")
    silent = NodeRecord("n1", "host-1", 42, T0 - timedelta(hours=1), T0 - timedelta(seconds=16))
    assert live.lost_reason(silent, T0) == (
        "lost: node n1 sent no heartbeat since 2026-12-07T09:21:45Z (more than the 15s lease: "
        "frozen, or its database path silent); its outcome is unknown")
