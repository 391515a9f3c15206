"""occurrence_id and the import-lightness of the store seam."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronctl.ids import occurrence_id, utc_iso
from cronctl.store.urls import kind_of, redact, scrub


def test_occurrence_id_is_a_stable_digest_of_job_and_utc_instant() -> None:
    planned = datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    # Pinned (sha256 of "nightly\n2026-03-08T07:00:00.000000Z", first 32 hex): changing it
    # would re-run every pending occurrence after an upgrade.
    assert occurrence_id("nightly", planned) == "af21791e23cf662e0a112d84740e0abe"
    assert len(occurrence_id("x", planned)) == 32
    same_instant = planned.astimezone(ZoneInfo("America/New_York"))
    assert occurrence_id("nightly", same_instant) == occurrence_id("nightly", planned)
    assert occurrence_id("nightly", planned + timedelta(microseconds=1)) != occurrence_id(
        "nightly", planned
    )
    assert occurrence_id("other", planned) != occurrence_id("nightly", planned)


def test_fold_instants_are_different_occurrences() -> None:
    ny = ZoneInfo("America/New_York")
    first = datetime(2026, 11, 1, 1, 30, tzinfo=ny)
    second = first.replace(fold=1)
    assert occurrence_id("j", first) != occurrence_id("j", second)


def test_utc_iso_is_fixed_width_and_sorts_like_time() -> None:
    a = datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=2)))
    b = datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert utc_iso(a) == "2025-12-31T22:00:00.000000Z"
    assert utc_iso(b) == "2026-01-01T00:00:00.000001Z"
    assert len(utc_iso(datetime(1, 1, 2, tzinfo=UTC))) == len(utc_iso(b)) == 27
    assert utc_iso(a) < utc_iso(b)
    with pytest.raises(ValueError, match="aware"):
        utc_iso(datetime(2026, 1, 1))


@given(st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 30),
                   timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                                              timezone(-timedelta(hours=11, seconds=7)),
                                              ZoneInfo("America/New_York"),
                                              ZoneInfo("Australia/Lord_Howe")])))
def test_utc_iso_is_the_utc_instant_field_by_field(instant: datetime) -> None:
    u = instant.astimezone(UTC)
    assert utc_iso(instant) == (f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:"
                                f"{u.minute:02d}:{u.second:02d}.{u.microsecond:06d}Z")


def test_redaction() -> None:
    url = "postgresql+psycopg://app:p%40ss@db.example:5432/cron?sslmode=require"
    assert redact(url) == "postgresql+psycopg://app:***@db.example:5432/cron?sslmode=require"
    assert redact("postgresql://h/db?password=zz&x=1") == "postgresql://h/db?password=***&x=1"
    assert scrub("user app password p@ss rejected", url) == "user app password *** rejected"
    assert (
        redact("sqlite:////var/lib/cronctl/cronctl.db") == "sqlite:////var/lib/cronctl/cronctl.db"
    )
    assert kind_of("none") == "memory" and kind_of("postgres://x/y") == "postgresql"
    with pytest.raises(ValueError, match=r"mysql://u:\*\*\*@h/d"):
        kind_of("mysql://u:pw@h/d")


def test_store_seam_does_not_import_sqlalchemy() -> None:
    code = (
        "import sys\n"
        "import cronctl.store, cronctl.ids, cronctl.store.records, cronctl.store.base\n"
        "import cronctl.cli.cmd_db\n"
        "from cronctl.store import open_store\n"
        "heavy = sorted(m for m in ('sqlalchemy', 'alembic', 'psycopg') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
