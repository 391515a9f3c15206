"""``cronctl list``'s rows and next-fire cells: a large set computes each distinct
schedule and each (instant, zone) cell once; jobs that differ in any field that makes
their schedule, or in their zone, still get their own."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cronctl.cli.cmd_list import table
from cronctl.cli.tables import plain
from cronctl.config import Config
from cronctl.jobs.model import CommandTarget, JobDefinition
from cronctl.views.jobs import list_rows

NOW = datetime(2026, 5, 1, 10, 0, 30, tzinfo=UTC)


def _job(job_id: str, **kw: object) -> JobDefinition:
    return replace(JobDefinition(id=job_id, target=CommandTarget(("true",)),
                                 cron="0 0 12 * * *"), **kw)


def _config(tmp_path: Path) -> Config:
    return Config(path=None, base_dir=tmp_path, database="none", jobs_dir=tmp_path,
                  node_id="n")


def test_jobs_sharing_a_schedule_share_its_next_fire_and_no_other_field_is_shared(
        tmp_path: Path) -> None:
    jobs = [_job("a"), _job("b"), _job("c", timezone="America/New_York"),
            _job("d", cron="0 30 12 * * *"),
            _job("e", cron=None, every=timedelta(hours=1)),
            _job("f", cron=None, every=timedelta(hours=1),
                 anchor=datetime(2026, 1, 1, 0, 20, tzinfo=UTC)),
            _job("g", enabled=False)]
    fires = {r.id: r.next_fire for r in list_rows(_config(tmp_path), jobs, NOW)}
    assert fires == {
        "a": datetime(2026, 5, 1, 12, tzinfo=UTC), "b": datetime(2026, 5, 1, 12, tzinfo=UTC),
        "c": datetime(2026, 5, 1, 16, tzinfo=UTC),  # 12:00 in New York (EDT)
        "d": datetime(2026, 5, 1, 12, 30, tzinfo=UTC),
        "e": datetime(2026, 5, 1, 11, tzinfo=UTC),
        "f": datetime(2026, 5, 1, 10, 20, tzinfo=UTC),
        "g": None}


def test_one_instant_in_two_zones_is_shown_in_each_zone(tmp_path: Path) -> None:
    jobs = [_job("a", cron="0 0 16 * * *"), _job("b", timezone="America/New_York"),
            _job("c", cron="0 0 16 * * *")]
    rows = list_rows(_config(tmp_path), jobs, NOW)
    assert len({r.next_fire for r in rows}) == 1
    forms = [cell[1] for row in table(rows, NOW).rows for cell in row.cells[-2:-1]]
    assert forms == ["05-01 16:00:00 (in 5h 59m)", "05-01 12:00:00 (in 5h 59m)",
                     "05-01 16:00:00 (in 5h 59m)"]
    assert "2026-05-01T16:00:00Z (in 5h 59m)  -" in plain(table(rows, NOW))[2]
