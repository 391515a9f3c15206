"""Calendars (docs/behaviour.md#spread-calendars-and-dependencies): days on which a job's planned
instants do not run.

A :class:`Calendar` is a frozen value built once from a ``[calendars.NAME]`` table. The
one question everything asks it is :meth:`Calendar.rule_for`: "is this LOCAL date (of a
job in this zone) excluded, and by which rule?" The answer is a short text naming the
rule (``holiday: Itsenäisyyspäivä``, ``exclude: 2026-12-24..2026-12-26``, ``weekday:
SAT``, ``ics: Company offsite``) or ``None``. It is pure (the same date gives the same
answer) and each (date, zone) is worked out once: the answers are cached on the value.

The rules, checked in this order (the first that excludes names the day, so a holiday
on a Sunday is named by its holiday, not by ``weekday: SUN``):

- ``exclude``: dates and inclusive ranges of dates;
- ``holidays``: the public holidays of a country (and subdivision) of the ``holidays``
  package, named in the country's own language;
- ``ics``: the VEVENTs of an iCalendar file with their recurrences
  (``recurring-ical-events``). An all-day event excludes the dates from its DTSTART up
  to, not including, its DTEND (one day without a DTEND). A timed event excludes every
  local date (in the job's zone) that it overlaps: from the date its start falls on to
  the date of the last instant before its end; an event without a zone (floating time)
  is read in the job's zone. A zero-length event excludes the date it happens on.
- ``weekdays``: days of the week (0 = SUN .. 6 = SAT, as in cron).

``holidays`` and ``icalendar`` are imported only when a calendar uses them, so a
configuration without calendars (and ``cronctl next EXPR``) never loads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


def cron_weekday(day: date) -> int:
    """``day``'s weekday as cron counts: 0 = Sunday .. 6 = Saturday."""
    return (day.weekday() + 1) % 7


@dataclass(frozen=True)
class DateRange:
    """The dates ``first`` .. ``last``, both included; ``text`` is how it was written."""

    first: date
    last: date

    @property
    def text(self) -> str:
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()}..{self.last.isoformat()}"


@dataclass(frozen=True)
class HolidaySpec:
    """``holidays = "FI"`` or ``{ country = "US", subdiv = "CA" }``."""

    country: str
    subdiv: str | None = None

    @property
    def text(self) -> str:
        return self.country if self.subdiv is None else f"{self.country}-{self.subdiv}"


@dataclass(frozen=True)
class IcsEvent:
    """One occurrence of a VEVENT: an all-day span (``start``/``end`` dates, end
    exclusive) or a timed one (aware datetimes; naive ones are floating)."""

    summary: str
    start: date | datetime
    end: date | datetime


class IcsSource:
    """A parsed iCalendar document that lists its events' occurrences around a date.
    Equal when the file's bytes are equal (so a reload sees a changed file)."""

    def __init__(self, path: str, data: bytes) -> None:
        import hashlib

        import icalendar  # lazily: only calendars with an ics file need it

        self.path = path
        self.digest = hashlib.sha256(data).hexdigest()
        self._calendar = icalendar.Calendar.from_ical(data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IcsSource) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"IcsSource({self.path!r})"

    def events_near(self, day: date) -> list[IcsEvent]:
        """The occurrences that overlap ``day`` - 2 .. ``day`` + 2 (a margin wide enough
        for any zone's offset; the caller decides which local dates each covers)."""
        import recurring_ical_events  # type: ignore[import-untyped]

        found = recurring_ical_events.of(self._calendar, components=["VEVENT"]).between(
            day - timedelta(days=2), day + timedelta(days=3))
        out: list[IcsEvent] = []
        for component in found:
            start = component.get("DTSTART")
            if start is None:
                continue
            begin = start.dt
            end_prop = component.get("DTEND")
            if end_prop is not None:
                end = end_prop.dt
            elif component.get("DURATION") is not None:
                end = begin + component.get("DURATION").dt
            elif isinstance(begin, datetime):
                end = begin
            else:
                end = begin + timedelta(days=1)
            summary = str(component.get("SUMMARY", "")).strip() or "(no summary)"
            out.append(IcsEvent(summary, begin, end))
        return out


def ics_covers(event: IcsEvent, day: date, zone: tzinfo) -> bool:
    """Whether ``event`` excludes the local date ``day`` of a job in ``zone`` (the rule in
    the module doc)."""
    if not isinstance(event.start, datetime):
        end = event.end if not isinstance(event.end, datetime) else event.end.date()
        return event.start <= day < max(end, event.start + timedelta(days=1))
    start = _local(event.start, zone)
    end = _local(event.end, zone) if isinstance(event.end, datetime) else datetime.combine(
        event.end, time(), zone)
    first = start.date()
    last = first if end <= start else (end - timedelta(microseconds=1)).date()
    return first <= day <= last


def _local(moment: datetime, zone: tzinfo) -> datetime:
    if moment.tzinfo is None:  # floating: the job's own wall clock
        return moment.replace(tzinfo=zone)
    return moment.astimezone(zone)


@dataclass(frozen=True)
class Calendar:
    """A ``[calendars.NAME]`` table, judged by :meth:`rule_for`. ``source`` is where it
    was defined (``cronctl.toml:12``)."""

    name: str
    exclude: tuple[DateRange, ...] = ()
    weekdays: frozenset[int] = frozenset()
    holidays: HolidaySpec | None = None
    ics: IcsSource | None = None
    source: str = field(default="", compare=False)
    # (date, zone key) -> rule or None; and the holidays object once it is built.
    _answers: dict[tuple[date, str], str | None] = field(
        default_factory=dict, compare=False, repr=False)
    _holiday_table: list[Any] = field(default_factory=list, compare=False, repr=False)

    def rule_for(self, day: date, zone: tzinfo) -> str | None:
        """The rule that excludes the local date ``day`` (of a job in ``zone``), or None."""
        key = (day, str(zone))
        try:
            return self._answers[key]
        except KeyError:
            pass
        answer = self._judge(day, zone)
        if len(self._answers) > 20_000:  # a long replay window: stay bounded
            self._answers.clear()
        self._answers[key] = answer
        return answer

    def _judge(self, day: date, zone: tzinfo) -> str | None:
        for span in self.exclude:
            if span.first <= day <= span.last:
                return f"exclude: {span.text}"
        if self.holidays is not None:
            name = self._holiday_names().get(day)
            if name:
                return f"holiday: {name}"
        if self.ics is not None:
            for event in self.ics.events_near(day):
                if ics_covers(event, day, zone):
                    return f"ics: {event.summary}"
        weekday = cron_weekday(day)
        if weekday in self.weekdays:
            return f"weekday: {DAY_NAMES[weekday]}"
        return None

    def _holiday_names(self) -> Mapping[date, str]:
        if not self._holiday_table:
            assert self.holidays is not None
            self._holiday_table.append(holiday_table(self.holidays))
        table: Mapping[date, str] = self._holiday_table[0]
        return table


def holiday_table(spec: HolidaySpec) -> Mapping[date, str]:
    """The ``holidays`` package's table for ``spec`` (it fills in years as they are
    asked for), named in the country's own language whatever ``$LANG`` says.
    :class:`ValueError` naming the problem for an unknown country or subdivision."""
    import holidays

    try:
        probe = holidays.country_holidays(spec.country, subdiv=spec.subdiv)
        language = getattr(probe, "default_language", None)
        table: Mapping[date, str] = holidays.country_holidays(
            spec.country, subdiv=spec.subdiv, language=language)
    except NotImplementedError as exc:
        raise ValueError(str(exc)) from None
    return table


@dataclass(frozen=True)
class Exclusion:
    """A planned instant a calendar excludes: which calendar, which rule, which date."""

    calendar: str
    rule: str
    day: date

    @property
    def detail(self) -> str:
        """The skip record's detail and what ``why`` and ``next`` say."""
        return f"calendar {self.calendar} excludes {self.day.isoformat()} ({self.rule})"


def excluded(calendars: tuple[Calendar, ...], planned: datetime, zone: tzinfo
             ) -> Exclusion | None:
    """Whether any of ``calendars`` excludes ``planned``, judged by its local date in
    ``zone`` (the first calendar that does, in the job's order)."""
    if not calendars:
        return None
    day = planned.astimezone(zone).date()
    for calendar in calendars:
        rule = calendar.rule_for(day, zone)
        if rule is not None:
            return Exclusion(calendar.name, rule, day)
    return None


__all__ = ["DAY_NAMES", "Calendar", "DateRange", "Exclusion", "HolidaySpec", "IcsSource",
           "cron_weekday", "excluded", "holiday_table", "ics_covers"]
