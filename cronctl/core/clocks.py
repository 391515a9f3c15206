"""A node's wall clock against the database's (docs/behaviour.md#clocks).

Every node of a cluster decides what is due and what is missed with its own wall clock,
but the instants it handles are shared through the database: a node whose clock runs
ahead would fire instants before they come and record instants others will still run
as missed. The database's clock is the cluster's one reference, so a node decides with
the earlier of the two clocks and refuses to act when its own is ahead by more than
``clock_skew_limit``. Pure: the runtime measures, these functions decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum

from cronctl.core.actions import JobState
from cronctl.errors import CronctlError


class ClockVerdict(Enum):
    OK = "ok"  # not ahead, or ahead by no more than the limit (decide with the database's)
    AHEAD = "ahead"  # ahead by more than the limit: refuse to act


class ClockAheadError(CronctlError):
    """The wall clock is ahead of the database server's by more than ``clock_skew_limit``.

    Acting would fire instants that have not come yet for the rest of the cluster and
    record instants they will still run as missed, so the node refuses to act."""

    def __init__(self, local: datetime, database: datetime, limit: timedelta) -> None:
        super().__init__(
            f"clock skew: the system clock ({local.isoformat()}) is {local - database} "
            f"ahead of the database server's ({database.isoformat()}), more than "
            f"clock_skew_limit ({limit}); fix the clock (NTP) or raise clock_skew_limit"
        )
        self.local = local
        self.database = database
        self.limit = limit


def server_at(server: datetime, sent: float, received: float, mono: float) -> datetime:
    """The database server's clock at monotonic time ``mono``, from a reading ``server``
    taken by a round trip between ``sent`` and ``received`` (monotonic seconds): the
    server read its clock somewhere inside the round trip, best guessed at its middle,
    and the monotonic clock carries the reading forward, so a step of the wall clock
    between two readings changes nothing."""
    return server + timedelta(seconds=mono - (sent + received) / 2)


def judge(local: datetime, database: datetime | None, limit: timedelta) -> ClockVerdict:
    """Whether a node whose clock reads ``local`` while the database's reads ``database``
    (None: the database has no clock of its own, SQLite on this host) may act."""
    if database is not None and local - database > limit:
        return ClockVerdict.AHEAD
    return ClockVerdict.OK


def refuse_if_ahead(local: datetime, database: datetime | None, limit: timedelta) -> None:
    """:class:`ClockAheadError` when :func:`judge` says ``AHEAD``."""
    if judge(local, database, limit) is ClockVerdict.AHEAD:
        assert database is not None
        raise ClockAheadError(local, database, limit)


def deciding_now(local: datetime, database: datetime | None) -> datetime:
    """The "now" a node decides with: its own clock, held back to the database's when it
    is ahead (an instant in the database's future is neither due nor missed). A clock
    behind the database's is kept: firing late is safe, and a clock far behind a cursor
    is refused on its own (:func:`cronctl.core.refuse_on_skew`)."""
    if database is not None and database < local:
        return database
    return local


@dataclass(frozen=True, slots=True)
class CappedCursor:
    """A persisted cursor that lay in the database's future, and what it became."""

    job_id: str
    cursor: datetime
    capped: datetime


def cap_cursors(states: Mapping[str, JobState], database: datetime | None
                ) -> tuple[dict[str, JobState], list[CappedCursor]]:
    """``states`` with every cursor past the database's clock set to the database's now,
    and which were. Only a node whose clock ran ahead writes such a cursor; trusting it
    would make a node with a right clock refuse to start ("behind job's persisted
    cursor") until real time caught up, so another node's mistake never locks it out."""
    if database is None:
        return dict(states), []
    out: dict[str, JobState] = {}
    capped: list[CappedCursor] = []
    for job_id, state in states.items():
        if state.cursor is not None and state.cursor > database:
            capped.append(CappedCursor(job_id, state.cursor, database))
            state = replace(state, cursor=database)
        out[job_id] = state
    return out, capped
