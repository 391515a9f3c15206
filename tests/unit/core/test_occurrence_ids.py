"""The core's cached occurrence ids are the store's occurrence ids, value for value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from core_helpers import T0, job

from cronctl.core import Fire, SchedulerCore
from cronctl.core.timing import OccurrenceIds
from cronctl.ids import occurrence_id


def test_same_value_as_the_store_ids_in_any_zone_and_after_the_cache_fills() -> None:
    ids = OccurrenceIds()
    berlin, minus5 = ZoneInfo("Europe/Berlin"), timezone(timedelta(hours=-5))
    instants = [T0 + timedelta(microseconds=7 * k, seconds=k) for k in range(50)]
    # The two instants of Berlin's autumn fold (02:30 CEST and 02:30 CET).
    fold = datetime(2026, 10, 25, 2, 30, tzinfo=berlin)
    instants += [fold, fold.replace(fold=1)]
    for _round in range(2):  # second round: from the cache
        for i, instant in enumerate(instants):
            for zone in (UTC, berlin, minus5):
                local = instant.astimezone(zone)
                assert ids(f"job-{i}", local) == occurrence_id(f"job-{i}", local)
    assert ids("a", fold) != ids("a", fold.replace(fold=1))
    small = OccurrenceIds()
    small.MAX_CACHED = 3
    for instant in instants:
        assert small("x", instant) == occurrence_id("x", instant)


def test_fires_carry_the_store_occurrence_id() -> None:
    core = SchedulerCore([job("a"), job("b")], max_concurrent_jobs=1)
    core.start(T0, {})
    fires = [a for a in core.tick(T0 + timedelta(seconds=1)).actions if isinstance(a, Fire)]
    assert len(fires) == 1  # b waits for the slot
    assert fires[0].occurrence_id == occurrence_id(fires[0].job_id, fires[0].planned)
    (nxt,) = [a for a in core.on_complete(fires[0].key, *_ok(), T0).actions
              if isinstance(a, Fire)]
    assert nxt.job_id == "b" and nxt.occurrence_id == occurrence_id("b", nxt.planned)


def _ok() -> tuple[object, None]:
    from cronctl.jobs.model import ExecutionStatus

    return ExecutionStatus.SUCCEEDED, None
