"""Calendars in the core (SPEC section 8): an excluded planned instant is a skip record
(reason calendar, naming the calendar and the rule), judged by its local date."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from core_helpers import job, of

from cronctl.core import Fire, JobState, Missed, SchedulerCore, Skip, SkipReason
from cronctl.jobs.calendar import Calendar, DateRange, HolidaySpec
from cronctl.jobs.model import ExecutionStatus, MisfirePolicy, Origin

FI = Calendar("fi", holidays=HolidaySpec("FI"))
WEEKEND = Calendar("weekend", weekdays=frozenset({0, 6}))


def _helsinki_daily(**kw: object) -> SchedulerCore:
    # 00:30 every day in Helsinki = 22:30Z the day before (EET, UTC+2)
    return SchedulerCore([job(cron="0 30 0 * * *", timezone="Europe/Helsinki",
                              calendars=(FI, WEEKEND), **kw)])


def test_excluded_local_date_is_a_calendar_skip() -> None:
    core = _helsinki_daily()
    start = datetime(2026, 12, 3, 12, tzinfo=UTC)
    core.start(start)
    fired: list[datetime] = []
    skips: list[Skip] = []
    for k in range(6):  # local dates 4 .. 9 December, each ticked a second after it is due
        now = datetime(2026, 12, 3, 22, 30, 1, tzinfo=UTC) + timedelta(days=k)
        d = core.tick(now)
        for f in of(d, Fire):
            fired.append(f.planned)
            core.on_complete(f.key, ExecutionStatus.SUCCEEDED, None, now)
        skips += of(d, Skip)
    local = [(t + timedelta(hours=2)).date() for t in fired]
    assert local == [date(2026, 12, 4), date(2026, 12, 7), date(2026, 12, 8),
                     date(2026, 12, 9)]
    # the 5th and 6th (UTC: the 4th and 5th at 22:30): Saturday, and a holiday on a Sunday
    assert [(s.planned, s.reason, s.origin, s.detail) for s in skips] == [
        (datetime(2026, 12, 4, 22, 30, tzinfo=UTC), SkipReason.CALENDAR, Origin.CRON,
         "calendar weekend excludes 2026-12-05 (weekday: SAT)"),
        (datetime(2026, 12, 5, 22, 30, tzinfo=UTC), SkipReason.CALENDAR, Origin.CRON,
         "calendar fi excludes 2026-12-06 (holiday: Itsenäisyyspäivä)"),
    ]


def test_misfire_catch_up_of_an_excluded_instant_is_a_calendar_skip() -> None:
    core = SchedulerCore([job(every=60, misfire_policy=MisfirePolicy.FIRE_ALL,
                              catchup_limit=3, calendars=(
                                  Calendar("x", exclude=(DateRange(date(2026, 3, 1),
                                                                   date(2026, 3, 1)),)),))])
    t0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
    d = core.start(t0 + timedelta(hours=1), {"j": JobState(cursor=t0)})
    assert of(d, Missed)
    assert of(d, Fire) == []
    calendar = [s for s in of(d, Skip) if s.reason is SkipReason.CALENDAR]
    assert len(calendar) == 3 and {s.origin for s in calendar} == {Origin.MISFIRE}


def test_manual_trigger_is_not_judged() -> None:
    core = _helsinki_daily()
    now = datetime(2026, 12, 5, 22, 40, tzinfo=UTC)  # a holiday in Helsinki
    core.start(now)
    _, d = core.trigger("j", now)
    assert len(of(d, Fire)) == 1 and of(d, Skip) == []


def test_why_names_the_calendar_and_rule() -> None:
    from dataclasses import dataclass

    from cronctl.core.why import Outcome, explain

    @dataclass
    class SkipRow:
        reason: str
        node_id: str
        detail: str | None

    j = job(cron="0 30 0 * * *", timezone="Europe/Helsinki", calendars=(FI,))
    t = datetime(2026, 12, 5, 22, 30, tzinfo=UTC)
    detail = "calendar fi excludes 2026-12-06 (holiday: Itsenäisyyspäivä)"
    done = explain(j, t, t, now=t + timedelta(hours=1), executions=[],
                   skips=[SkipRow("calendar", "n1", detail)], cursor=t, paused=False,
                   tracked=True, calendar=detail)
    assert (done.outcome, done.reason) == (Outcome.SKIPPED, "calendar")
    assert done.detail == f"skipped: {detail} (decided by node n1)"
    ahead = explain(j, t, t, now=t - timedelta(days=1), executions=[], skips=[], cursor=None,
                    paused=False, tracked=True, calendar=detail)
    assert (ahead.outcome, ahead.reason) == (Outcome.FUTURE, "calendar")
    assert ahead.detail.endswith(f"it will not run: {detail}")


def test_next_run_steps_over_excluded_instants() -> None:
    from cronctl.core.calendars import next_run
    from cronctl.core.timing import schedule_for

    j = job(cron="0 0 9 * * *", timezone="Europe/Helsinki", calendars=(FI, WEEKEND))
    friday_evening = datetime(2026, 12, 4, 18, tzinfo=UTC)
    # Saturday 5th, Sunday 6th (also Itsenäisyyspäivä) are excluded: Monday 7th, 07:00Z
    assert next_run(j, schedule_for(j), friday_evening) == datetime(2026, 12, 7, 7,
                                                                      tzinfo=UTC)
    every_day = job(cron="0 0 9 * * *", calendars=(Calendar("all", weekdays=frozenset(
        range(7))),))
    assert next_run(every_day, schedule_for(every_day), friday_evening, search=10) is None
