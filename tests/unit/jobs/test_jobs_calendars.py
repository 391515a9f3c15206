"""Calendars (SPEC section 8): [calendars.NAME] tables, the pure judgment of a local
date, and the validation of the tables and of a job's ``calendar`` key."""

from __future__ import annotations

import textwrap
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from jobs_helpers import Load, WriteJob

from cronctl.config import read_config
from cronctl.jobs.calendar import Calendar, DateRange, HolidaySpec, excluded
from cronctl.jobs.loader import load_jobs
from cronctl.jobs.registry import ServiceRegistry
from cronctl.options import GlobalOptions

HELSINKI = ZoneInfo("Europe/Helsinki")
NEW_YORK = ZoneInfo("America/New_York")

ICS = """\
BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//cronctl tests//EN
BEGIN:VEVENT
UID:offsite@test
DTSTART;VALUE=DATE:20261203
DTEND;VALUE=DATE:20261205
SUMMARY:Offsite
RRULE:FREQ=MONTHLY;COUNT=3
END:VEVENT
BEGIN:VEVENT
UID:maint@test
DTSTART:20261208T230000Z
DTEND:20261209T003000Z
SUMMARY:Late maintenance
END:VEVENT
BEGIN:VEVENT
UID:midnight@test
DTSTART;TZID=Europe/Helsinki:20261215T220000
DTEND;TZID=Europe/Helsinki:20261216T000000
SUMMARY:Ends at midnight
END:VEVENT
END:VCALENDAR
"""


def _job(body: str) -> str:
    return textwrap.dedent(body)


def test_rules_name_the_day() -> None:
    cal = Calendar("biz", exclude=(DateRange(date(2026, 12, 24), date(2026, 12, 26)),),
                   weekdays=frozenset({0, 6}), holidays=HolidaySpec("FI"))
    assert cal.rule_for(date(2026, 12, 24), HELSINKI) == "exclude: 2026-12-24..2026-12-26"
    # a holiday on a Sunday is named by the holiday, in the country's language
    assert cal.rule_for(date(2026, 12, 6), HELSINKI) == "holiday: Itsenäisyyspäivä"
    assert cal.rule_for(date(2026, 12, 12), HELSINKI) == "weekday: SAT"
    assert cal.rule_for(date(2026, 12, 7), HELSINKI) is None
    assert cal.rule_for(date(2027, 12, 6), HELSINKI) == "holiday: Itsenäisyyspäivä"


def test_instant_is_judged_by_its_local_date() -> None:
    cal = Calendar("fi", holidays=HolidaySpec("FI"))
    # 2026-12-05T22:30Z is 6 December 00:30 in Helsinki: excluded, though UTC says the 5th
    hit = excluded((cal,), datetime(2026, 12, 5, 22, 30, tzinfo=UTC), HELSINKI)
    assert hit is not None and hit.day == date(2026, 12, 6)
    assert hit.detail == "calendar fi excludes 2026-12-06 (holiday: Itsenäisyyspäivä)"
    # the same instant for a New York job is 5 December: not excluded
    assert excluded((cal,), datetime(2026, 12, 5, 22, 30, tzinfo=UTC), NEW_YORK) is None
    # and 2026-12-06T22:30Z is already 7 December in Helsinki
    assert excluded((cal,), datetime(2026, 12, 6, 22, 30, tzinfo=UTC), HELSINKI) is None


def test_any_calendar_of_a_list_excludes() -> None:
    a = Calendar("a", weekdays=frozenset({6}))
    b = Calendar("b", exclude=(DateRange(date(2026, 12, 9), date(2026, 12, 9)),))
    t = datetime(2026, 12, 9, 10, tzinfo=UTC)
    hit = excluded((a, b), t, HELSINKI)
    assert hit is not None and (hit.calendar, hit.rule) == ("b", "exclude: 2026-12-09")
    assert excluded((a,), t, HELSINKI) is None


def test_subdivision_holidays() -> None:
    cal = Calendar("ca", holidays=HolidaySpec("US", "CA"))
    assert cal.rule_for(date(2026, 3, 31), NEW_YORK) == "holiday: Cesar Chavez Day"
    assert Calendar("us", holidays=HolidaySpec("US")).rule_for(date(2026, 3, 31),
                                                               NEW_YORK) is None


def test_answers_are_cached_per_date_and_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    cal = Calendar("w", weekdays=frozenset({6}))
    calls: list[date] = []
    judge = Calendar._judge

    def counting(self: Calendar, day: date, zone: object) -> str | None:
        calls.append(day)
        return judge(self, day, zone)  # type: ignore[arg-type]

    monkeypatch.setattr(Calendar, "_judge", counting)
    for _ in range(3):
        cal.rule_for(date(2026, 12, 12), HELSINKI)
    assert calls == [date(2026, 12, 12)]


def _load_ics(tmp_path: Path, write: WriteJob, load: Load) -> Calendar:
    (tmp_path / "jobs.d" / "off.ics").write_text(ICS, encoding="utf-8")
    write("a.toml", """
        [calendars.off]
        ics = "off.ics"

        [jobs.j]
        cron = "0 0 9 * * *"
        timezone = "Europe/Helsinki"
        command = ["true"]
        calendar = "off"
        """)
    result = load()
    assert result.violations == ()
    [job] = result.jobs
    [cal] = job.calendars
    return cal


def test_ics_all_day_timed_and_recurring(tmp_path: Path, write: WriteJob, load: Load) -> None:
    cal = _load_ics(tmp_path, write, load)
    # all-day, two days (DTEND exclusive), repeated monthly by its RRULE
    for day in (date(2026, 12, 3), date(2026, 12, 4), date(2027, 1, 3), date(2027, 2, 4)):
        assert cal.rule_for(day, HELSINKI) == "ics: Offsite", day
    assert cal.rule_for(date(2026, 12, 5), HELSINKI) is None
    assert cal.rule_for(date(2027, 3, 3), HELSINKI) is None  # COUNT=3
    # timed: 23:00Z-00:30Z is 01:00-02:30 on the 9th in Helsinki, 18:00-19:30 on the 8th
    # in New York: the local dates it covers
    assert cal.rule_for(date(2026, 12, 9), HELSINKI) == "ics: Late maintenance"
    assert cal.rule_for(date(2026, 12, 8), HELSINKI) is None
    assert cal.rule_for(date(2026, 12, 8), NEW_YORK) == "ics: Late maintenance"
    # an event that ends at midnight does not cover the next day
    assert cal.rule_for(date(2026, 12, 15), HELSINKI) == "ics: Ends at midnight"
    assert cal.rule_for(date(2026, 12, 16), HELSINKI) is None


def test_calendar_in_config_file(tmp_path: Path, write: WriteJob) -> None:
    (tmp_path / "cronctl.toml").write_text(textwrap.dedent("""
        [calendars.business]
        holidays = { country = "FI" }
        weekdays = ["sat", "Sunday"]
        exclude = ["2026-12-24..2026-12-26", 2026-12-31]
        """), encoding="utf-8")
    write("a.toml", """
        [jobs.j]
        cron = "0 0 9 * * *"
        command = ["true"]
        calendar = ["business"]
        """)
    config = read_config(GlobalOptions(config=tmp_path / "cronctl.toml")).config
    result = load_jobs(config.job_settings, registry=ServiceRegistry())
    assert result.violations == ()
    [cal] = result.jobs[0].calendars
    assert cal.weekdays == frozenset({0, 6})
    assert cal.rule_for(date(2026, 12, 31), HELSINKI) == "exclude: 2026-12-31"


@pytest.mark.parametrize(("table", "key", "message"), [
    ('holidays = "XX"', "calendars.c.holidays", "unknown country 'XX'"),
    ('holidays = { country = "US", subdiv = "ZZ" }', "calendars.c.holidays",
     "unknown subdivision 'ZZ' of US"),
    ('exclude = ["2026-02-30"]', "calendars.c.exclude", "'2026-02-30' is not a date"),
    ('exclude = ["2026-12-26..2026-12-24"]', "calendars.c.exclude", "ends before it starts"),
    ('weekdays = ["SATX"]', "calendars.c.weekdays", "'SATX' is not a day of the week"),
    ('ics = "missing.ics"', "calendars.c.ics", "cannot read jobs.d/missing.ics"),
    ('ics = "bad.ics"', "calendars.c.ics", "is not a valid iCalendar file"),
    ('exclud = ["2026-12-24"]', "calendars.c.exclud", "did you mean 'exclude'?"),
])
def test_bad_calendar_tables(tmp_path: Path, write: WriteJob, load: Load, table: str,
                             key: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs.d" / "bad.ics").write_text("this is not iCalendar\n", encoding="utf-8")
    write("a.toml", f"""
        [jobs.j]
        cron = "0 0 9 * * *"
        command = ["true"]
        calendar = "c"

        [calendars.c]
        {table}
        """)
    result = load()
    [v] = result.violations  # the job naming the broken calendar is not told "unknown" too
    assert v.key == key and message in v.message, v
    assert v.source == "jobs.d/a.toml:7"


def test_unknown_calendar_did_you_mean(write: WriteJob, load: Load) -> None:
    write("a.toml", """
        [calendars.business]
        weekdays = ["SAT"]

        [jobs.j]
        cron = "0 0 9 * * *"
        command = ["true"]
        calendar = ["business", "busines"]
        """)
    [v] = load().violations
    assert (v.job, v.key) == ("j", "calendar")
    assert v.message == "unknown calendar 'busines' (did you mean 'business'?)"
    assert v.source.endswith("a.toml:7")


def test_duplicate_calendar_names(write: WriteJob, load: Load) -> None:
    write("a.toml", """
        [calendars.c]
        weekdays = ["SAT"]
        """)
    write("b.toml", """
        [calendars.c]
        weekdays = ["SUN"]
        """)
    [v] = load().violations
    assert "duplicate calendar 'c'" in v.message
