"""DST gaps and folds in named zones. Each class pins one zone and writes its transitions.

All expected fires are UTC instants, written as ``Z`` strings.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from cronctl.cron import Schedule


def z(text: str) -> datetime:
    """``"2026-03-08T07:00"`` as an aware UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def fires(sched: Schedule, a: str, b: str) -> list[str]:
    return [f.strftime("%Y-%m-%dT%H:%M:%S") for f in sched.between(z(a), z(b))]


class TestNewYork:
    """America/New_York, 2026:

    ======================  ============  =========================================
    UTC instant             offset        wall clock
    ======================  ============  =========================================
    2026-03-08 07:00Z       -05 -> -04    02:00 EST -> 03:00 EDT (02:xx never exists)
    2026-11-01 06:00Z       -04 -> -05    02:00 EDT -> 01:00 EST (01:xx happens twice)
    ======================  ============  =========================================
    """

    TZ = "America/New_York"

    def test_gap_shift_fires_at_the_end_of_the_gap(self) -> None:
        sched = Schedule("0 30 2 * * *", self.TZ, dst_gap="shift")
        assert fires(sched, "2026-03-07T12:00", "2026-03-09T12:00") == [
            "2026-03-08T07:00:00",  # 03:00 EDT, the first instant after the gap
            "2026-03-09T06:30:00",
        ]

    def test_gap_skip_fires_nothing_that_day(self) -> None:
        sched = Schedule("0 30 2 * * *", self.TZ, dst_gap="skip")
        assert fires(sched, "2026-03-07T12:00", "2026-03-09T12:00") == ["2026-03-09T06:30:00"]

    def test_gap_auto_is_shift_for_fixed_time_jobs(self) -> None:
        assert Schedule("0 30 2 * * *", self.TZ).dst_gap == "shift"
        assert Schedule("0 30 2 * * *", self.TZ).next_after(z("2026-03-08T00:00")) == z(
            "2026-03-08T07:00"
        )

    def test_gap_auto_is_skip_for_periodic_jobs(self) -> None:
        # SPEC: "0 */2 * * *" fires 00:00, 04:00 on that day, never at 03:00.
        sched = Schedule("0 */2 * * *", self.TZ)
        assert sched.dst_gap == "skip"
        local = [f.astimezone(ZoneInfo(self.TZ)).strftime("%H:%M")
                 for f in sched.between(z("2026-03-08T04:59"), z("2026-03-08T12:00"))]
        assert local == ["00:00", "04:00", "06:00", "08:00"]

    def test_all_gap_times_collapse_into_one_fire(self) -> None:
        sched = Schedule("0 0,15,30,45 2 * * *", self.TZ)
        assert fires(sched, "2026-03-08T00:00", "2026-03-08T12:00") == ["2026-03-08T07:00:00"]

    def test_gap_end_named_too_fires_once(self) -> None:
        sched = Schedule("0 0 2,3 * * *", self.TZ)
        assert fires(sched, "2026-03-08T00:00", "2026-03-08T12:00") == ["2026-03-08T07:00:00"]
        sched = Schedule("0 30 2,3 * * *", self.TZ)
        assert fires(sched, "2026-03-08T00:00", "2026-03-08T12:00") == [
            "2026-03-08T07:00:00",
            "2026-03-08T07:30:00",
        ]

    def test_search_starting_exactly_at_the_gap_end(self) -> None:
        sched = Schedule("0 30 2 * * *", self.TZ)
        assert sched.next_after(z("2026-03-08T06:59:59")) == z("2026-03-08T07:00")
        assert sched.next_after(z("2026-03-08T07:00")) == z("2026-03-09T06:30")

    @pytest.mark.parametrize(
        ("policy", "expected"),
        [
            ("first", ["2026-11-01T05:30:00"]),
            ("second", ["2026-11-01T06:30:00"]),
            ("both", ["2026-11-01T05:30:00", "2026-11-01T06:30:00"]),
            ("auto", ["2026-11-01T05:30:00"]),  # fixed-time: first
        ],
    )
    def test_fold_policies(self, policy: str, expected: list[str]) -> None:
        sched = Schedule("0 30 1 * * *", self.TZ, dst_fold=policy)
        assert fires(sched, "2026-11-01T00:00", "2026-11-01T12:00") == expected

    def test_next_after_inside_the_second_pass_under_first(self) -> None:
        # SPEC worked example: from 06:15Z (01:15 EST, second pass) the next is 11-02.
        sched = Schedule("0 30 1 * * *", self.TZ, dst_fold="first")
        assert sched.next_after(z("2026-11-01T06:15")) == z("2026-11-02T06:30")

    def test_next_after_is_strictly_later_in_utc_inside_a_fold(self) -> None:
        sched = Schedule("0 30 1 * * *", self.TZ, dst_fold="both")
        first = sched.next_after(z("2026-11-01T00:00"))
        assert first == z("2026-11-01T05:30")
        # The same wall time, fold=1, is a later instant: it must be found next.
        second = sched.next_after(first.astimezone(ZoneInfo(self.TZ)))
        assert second == z("2026-11-01T06:30")
        assert sched.next_after(second.astimezone(ZoneInfo(self.TZ))) == z("2026-11-02T06:30")

    def test_periodic_job_keeps_its_rhythm_through_the_fold(self) -> None:
        sched = Schedule("0 */30 * * * *", self.TZ)  # auto: both
        assert fires(sched, "2026-11-01T04:59", "2026-11-01T07:00") == [
            "2026-11-01T05:00:00",  # 01:00 EDT
            "2026-11-01T05:30:00",  # 01:30 EDT
            "2026-11-01T06:00:00",  # 01:00 EST
            "2026-11-01T06:30:00",  # 01:30 EST
            "2026-11-01T07:00:00",  # 02:00 EST
        ]

    def test_dst_notes(self) -> None:
        sched = Schedule("0 30 2 * * *", self.TZ)
        assert sched.dst_note(z("2026-03-08T07:00")) == "shifted: 02:30 does not exist"
        assert sched.dst_note(z("2026-03-09T06:30")) is None
        folded = Schedule("0 30 1 * * *", self.TZ, dst_fold="both")
        assert folded.dst_note(z("2026-11-01T05:30")) == "repeated hour, first pass"
        assert folded.dst_note(z("2026-11-01T06:30")) == "repeated hour, second pass"
        assert Schedule("0 0 3 * * *", self.TZ, dst_gap="skip").dst_note(
            z("2026-03-08T07:00")) is None


class TestHelsinki:
    """Europe/Helsinki, 2026:

    2026-03-29 01:00Z  +02 -> +03  03:00 EET -> 04:00 EEST (03:xx never exists)
    2026-10-25 01:00Z  +03 -> +02  04:00 EEST -> 03:00 EET (03:xx happens twice)
    """

    TZ = "Europe/Helsinki"

    def test_gap(self) -> None:
        assert Schedule("0 30 3 * * *", self.TZ).next_after(z("2026-03-28T02:00")) == z(
            "2026-03-29T01:00"
        )
        assert Schedule("0 30 3 * * *", self.TZ, dst_gap="skip").next_after(
            z("2026-03-28T02:00")
        ) == z("2026-03-30T00:30")

    def test_fold(self) -> None:
        assert fires(Schedule("0 30 3 * * *", self.TZ), "2026-10-24T12:00",
                     "2026-10-25T12:00") == ["2026-10-25T00:30:00"]
        assert fires(Schedule("0 30 3 * * *", self.TZ, dst_fold="second"), "2026-10-24T12:00",
                     "2026-10-25T12:00") == ["2026-10-25T01:30:00"]

    @pytest.mark.parametrize("b", ["2026-10-25T00:30", "2026-10-25T00:45", "2026-10-25T00:59:59"])
    def test_between_ending_inside_the_first_pass_under_second(self, b: str) -> None:
        # 00:30Z is 03:30 EEST, the first pass: "second" must not fire it, even when the
        # window ends before the transition (01:00Z) and so never reaches it.
        sched = Schedule("0 30 3 * * *", self.TZ, dst_fold="second")
        assert fires(sched, "2026-10-24T12:00", b) == []
        assert sched.next_after(z("2026-10-24T12:00")) == z("2026-10-25T01:30")

    def test_between_ending_inside_the_first_pass_of_a_periodic_job(self) -> None:
        sched = Schedule("0 */15 * * * *", self.TZ, dst_fold="second")
        # 00:00Z and 00:15Z are 03:00 and 03:15 EEST, the first pass.
        assert fires(sched, "2026-10-24T23:50", "2026-10-25T00:20") == []
        assert fires(sched, "2026-10-24T23:50", "2026-10-25T01:20") == [
            "2026-10-25T01:00:00",  # 03:00 EET, second pass
            "2026-10-25T01:15:00",
        ]

    def test_hourly_through_both_transitions(self) -> None:
        sched = Schedule("@hourly", self.TZ)
        spring = fires(sched, "2026-03-28T23:30", "2026-03-29T02:30")
        assert spring == ["2026-03-29T00:00:00", "2026-03-29T01:00:00", "2026-03-29T02:00:00"]
        autumn = fires(sched, "2026-10-24T23:30", "2026-10-25T02:30")
        assert autumn == ["2026-10-25T00:00:00", "2026-10-25T01:00:00", "2026-10-25T02:00:00"]


class TestLordHowe:
    """Australia/Lord_Howe, 2026 (30-minute shifts):

    2026-04-04 15:00Z  +11:00 -> +10:30  02:00 -> 01:30 on 04-05 (01:30-01:59 twice)
    2026-10-03 15:30Z  +10:30 -> +11:00  02:00 -> 02:30 on 10-04 (02:00-02:29 never exist)
    """

    TZ = "Australia/Lord_Howe"

    def test_half_hour_gap(self) -> None:
        sched = Schedule("0 15 2 * * *", self.TZ)
        assert sched.next_after(z("2026-10-03T12:00")) == z("2026-10-03T15:30")  # 02:30
        assert sched.dst_note(z("2026-10-03T15:30")) == "shifted: 02:15 does not exist"
        assert Schedule("0 45 2 * * *", self.TZ).next_after(z("2026-10-03T12:00")) == z(
            "2026-10-03T15:45"
        )

    def test_half_hour_fold(self) -> None:
        expr = "0 45 1 * * *"
        assert fires(Schedule(expr, self.TZ), "2026-04-04T12:00", "2026-04-04T18:00") == [
            "2026-04-04T14:45:00"
        ]
        assert fires(Schedule(expr, self.TZ, dst_fold="both"), "2026-04-04T12:00",
                     "2026-04-04T18:00") == ["2026-04-04T14:45:00", "2026-04-04T15:15:00"]
        note = Schedule(expr, self.TZ, dst_fold="second").dst_note(z("2026-04-04T15:15"))
        assert note == "repeated 30 minutes, second pass"


class TestApia:
    """Pacific/Apia, 2011: the whole of 2011-12-30 was skipped.

    2011-09-24 14:00Z  -11 -> -10  03:00 -> 04:00 (03:xx never exists)
    2011-12-30 10:00Z  -10 -> +14  12-29 24:00 -> 12-31 00:00 (all of 12-30 never exists)
    """

    TZ = "Pacific/Apia"

    def test_fixed_time_job_on_the_skipped_day_shifts_to_the_next_midnight(self) -> None:
        sched = Schedule("0 0 8 * * *", self.TZ)
        assert fires(sched, "2011-12-29T12:00", "2011-12-31T12:00") == [
            "2011-12-29T18:00:00",  # 12-29 08:00 -10
            "2011-12-30T10:00:00",  # 12-30 08:00 does not exist -> 12-31 00:00 +14
            "2011-12-30T18:00:00",  # 12-31 08:00 +14
        ]
        assert sched.dst_note(z("2011-12-30T10:00")) == "shifted: 2011-12-30 08:00 does not exist"

    def test_skip_loses_the_day(self) -> None:
        sched = Schedule("0 0 8 * * *", self.TZ, dst_gap="skip")
        assert fires(sched, "2011-12-29T12:00", "2011-12-31T12:00") == [
            "2011-12-29T18:00:00",
            "2011-12-30T18:00:00",
        ]

    def test_date_only_on_the_skipped_day(self) -> None:
        sched = Schedule("0 0 12 30 12 *", self.TZ)
        assert sched.next_after(z("2011-06-01T00:00")) == z("2011-12-30T10:00")
        assert sched.next_after(z("2011-12-30T10:00")) == z("2012-12-29T22:00")  # +14 (DST)

    def test_periodic_job_skips_the_day(self) -> None:
        sched = Schedule("0 0 */6 * * *", self.TZ)
        assert fires(sched, "2011-12-29T23:00", "2011-12-30T17:00") == [
            "2011-12-30T04:00:00",  # 12-29 18:00 -10
            "2011-12-30T10:00:00",  # 12-31 00:00 +14 (it exists, and is named)
            "2011-12-30T16:00:00",  # 12-31 06:00 +14
        ]

    def test_september_gap(self) -> None:
        assert Schedule("0 30 3 * * *", self.TZ).next_after(z("2011-09-24T00:00")) == z(
            "2011-09-24T14:00"
        )


class TestDublin:
    """Europe/Dublin, 2026. tzdata models Irish time with *negative* DST: IST (+01) is
    standard time and winter GMT (+00) has save = -1h, so ``dst()`` is nonzero in winter.
    The engine only looks at ``utcoffset()``:

    2026-03-29 01:00Z  +00 -> +01  01:00 -> 02:00 (01:xx never exists)
    2026-10-25 01:00Z  +01 -> +00  02:00 -> 01:00 (01:xx happens twice)
    """

    TZ = "Europe/Dublin"

    def test_negative_dst_is_modelled(self) -> None:
        winter = datetime(2026, 1, 15, 12, tzinfo=ZoneInfo(self.TZ))
        assert winter.dst() is not None and winter.dst().total_seconds() < 0

    def test_gap(self) -> None:
        sched = Schedule("0 30 1 * * *", self.TZ)
        assert sched.next_after(z("2026-03-28T12:00")) == z("2026-03-29T01:00")
        assert sched.dst_note(z("2026-03-29T01:00")) == "shifted: 01:30 does not exist"

    def test_fold(self) -> None:
        assert fires(Schedule("0 30 1 * * *", self.TZ), "2026-10-24T12:00",
                     "2026-10-25T12:00") == ["2026-10-25T00:30:00"]
        assert fires(Schedule("0 30 1 * * *", self.TZ, dst_fold="both"), "2026-10-24T12:00",
                     "2026-10-25T12:00") == ["2026-10-25T00:30:00", "2026-10-25T01:30:00"]

    def test_ordinary_days_either_side(self) -> None:
        sched = Schedule("0 0 9 * * *", self.TZ)
        assert sched.next_after(z("2026-01-15T00:00")) == z("2026-01-15T09:00")  # GMT
        assert sched.next_after(z("2026-07-15T00:00")) == z("2026-07-15T08:00")  # IST


def test_kolkata_has_no_transitions() -> None:
    sched = Schedule("0 30 2 * * *", "Asia/Kolkata")
    assert sched.next_after(z("2026-03-08T00:00")) == z("2026-03-08T21:00")  # +05:30


def test_zoneinfo_object_is_accepted() -> None:
    sched = Schedule("0 30 2 * * *", ZoneInfo("America/New_York"))
    assert sched.timezone == "America/New_York"
    assert sched.next_after(z("2026-03-08T00:00")) == z("2026-03-08T07:00")
