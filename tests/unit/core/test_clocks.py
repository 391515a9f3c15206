"""A node's clock against the database server's (SPEC section 4, "Clocks"): the pure
decisions. A node decides with the earlier of the two clocks, refuses to act when its
own is ahead by more than ``clock_skew_limit``, and never trusts a cursor in the
database's future."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core_helpers import T0, at, job, of

from cronctl.core import (
    ClockAheadError,
    ClockVerdict,
    Fire,
    JobState,
    Missed,
    SchedulerCore,
    Skip,
    cap_cursors,
    deciding_now,
    judge,
    refuse_if_ahead,
    refuse_on_skew,
    server_at,
)
from cronctl.jobs.model import ExecutionStatus, MisfirePolicy

LIMIT = timedelta(minutes=5)


def test_server_reading_is_carried_forward_on_the_monotonic_clock() -> None:
    # Read inside a round trip from mono 10.0 to 10.2: taken as the server's at 10.1.
    assert server_at(T0, 10.0, 10.2, 10.1) == T0
    assert server_at(T0, 10.0, 10.2, 15.1) == at(5)


def test_judge_refuses_only_a_clock_ahead_by_more_than_the_limit() -> None:
    assert judge(at(300), T0, LIMIT) is ClockVerdict.OK  # ahead by exactly the limit
    assert judge(at(301), T0, LIMIT) is ClockVerdict.AHEAD
    assert judge(at(-3600), T0, LIMIT) is ClockVerdict.OK  # behind: the cursor rule's
    assert judge(at(3600), None, LIMIT) is ClockVerdict.OK  # SQLite: no server clock


def test_refusal_names_both_clocks_and_the_limit() -> None:
    refuse_if_ahead(at(90), T0, LIMIT)
    with pytest.raises(ClockAheadError) as err:
        refuse_if_ahead(at(400), T0, LIMIT)
    message = str(err.value)
    assert "\n" not in message and err.value.exit_code == 1
    for part in (at(400).isoformat(), T0.isoformat(), "0:05:00", "0:06:40 ahead"):
        assert part in message, message


def test_deciding_now_is_held_back_to_the_database_only_when_ahead() -> None:
    assert deciding_now(at(90), T0) == T0
    assert deciding_now(at(-2), T0) == at(-2)
    assert deciding_now(at(90), None) == at(90)


def test_cursors_in_the_database_future_are_capped_at_its_now() -> None:
    states = {"ahead": JobState(at(400), paused=True), "past": JobState(at(-5)),
              "none": JobState()}
    out, capped = cap_cursors(states, T0)
    assert out == {"ahead": JobState(T0, paused=True), "past": JobState(at(-5)),
                   "none": JobState()}
    assert [(c.job_id, c.cursor, c.capped) for c in capped] == [("ahead", at(400), T0)]
    # ... so a node with a right clock is not refused as "behind the persisted cursor".
    with pytest.raises(Exception, match="behind job 'ahead'"):
        refuse_on_skew(states, T0, LIMIT)
    refuse_on_skew(out, T0, LIMIT)
    assert cap_cursors(states, None) == (states, [])


def test_a_clock_stepped_ahead_neither_fires_early_nor_misses_instants() -> None:
    """A node whose wall clock stepped +90 s decides with the database's clock: the
    instants of the next 90 s are neither fired nor recorded as missed."""
    core = SchedulerCore([job(every=1, misfire_policy=MisfirePolicy.SKIP,
                              misfire_threshold=timedelta(seconds=5))])
    core.start(T0)
    fired: list[Fire] = []
    skipped: list[Skip | Missed] = []
    for s in range(1, 31):
        database, local = at(s), at(s + 90)
        d = core.tick(deciding_now(local, database))
        fired += of(d, Fire)
        skipped += of(d, Skip) + of(d, Missed)
        for f in of(d, Fire):
            core.on_complete(f.key, ExecutionStatus.SUCCEEDED, None, at(s))
    assert skipped == []
    assert [f.planned for f in fired] == [at(s) for s in range(1, 31)]
