"""The parsers under the CLI, called directly (thousands of inputs a second): each input
parses or raises the one typed error its API documents, with a one-line message.

* ``CronExpression`` / ``Schedule``: ``CronSyntaxError`` (or ``UnknownTimezoneError``);
  a parsed expression explains itself, re-parses from its normalized text to an equal
  expression, and searches without error.
* ``parse_duration``: ``DurationError``.
* ``argtypes.parse_time`` / ``parse_int``: ``UsageError``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fuzz_strategies import cron_expressions, durations, integers_text, times, zones
from fuzz_support import deadline, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from cronctl.argtypes import AGO, SIGNED, parse_int, parse_time
from cronctl.cron import CronExpression, CronSyntaxError, Schedule, UnknownTimezoneError
from cronctl.durations import DurationError, parse_duration
from cronctl.errors import UsageError

NOW = datetime(2026, 3, 8, 6, 30, tzinfo=UTC)


def _one_line(exc: BaseException) -> None:
    message = str(exc)
    assert message.strip(), repr(exc)
    assert len(message.splitlines()) == 1, repr(message)


@fuzz_settings(600)
@given(text=cron_expressions, zone=st.one_of(st.just("UTC"), zones),
       gap=st.sampled_from(("auto", "shift", "skip", "bogus")),
       fold=st.sampled_from(("auto", "first", "second", "both", "")))
def test_schedules(text: str, zone: str, gap: str, fold: str) -> None:
    with deadline(10):
        try:
            sched = Schedule(text, zone, dst_gap=gap, dst_fold=fold)
        except (CronSyntaxError, UnknownTimezoneError, ValueError) as exc:
            # ValueError: the documented one for a bad dst_gap / dst_fold value
            _one_line(exc)
            return
        assert sched.explain().strip()
        fire = sched.next_after(NOW)
        assert fire is None or fire > NOW
        sched.between(NOW, NOW + timedelta(days=2), limit=20)
        if sched.expression is not None:
            again = CronExpression(sched.expression.text)
            assert again == sched.expression, (text, sched.expression.text)
            assert again.text == sched.expression.text


@fuzz_settings(600)
@given(text=durations)
def test_durations(text: str) -> None:
    try:
        value = parse_duration(text)
    except DurationError as exc:
        _one_line(exc)
        return
    assert value >= timedelta(0)


@fuzz_settings(250)  # each example searches 4 years in Pacific/Apia: the slowest
@given(text=times, relative=st.sampled_from((AGO, SIGNED)))
def test_time_arguments(text: str, relative: str) -> None:
    try:
        at = parse_time(text, NOW, what="--since", relative=relative)
    except UsageError as exc:
        _one_line(exc)
        return
    assert at.tzinfo is not None
    # What the commands then do with it: search 4 years either side, show it locally.
    Schedule("0 30 1 * * *", "Pacific/Apia").next_after(at)
    Schedule("@every 90s").next_after(at)
    at.astimezone(UTC).isoformat()


@fuzz_settings(300)
@given(text=integers_text)
def test_integer_arguments(text: str) -> None:
    try:
        value = parse_int(text, what="--limit", minimum=1, maximum=1000)
    except UsageError as exc:
        _one_line(exc)
        return
    assert 1 <= value <= 1000
