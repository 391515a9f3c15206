"""What the core decides: frozen action records, the inputs it reads from the store, and
the :class:`Decision` every event returns.

The runtime executes actions in order. An action never needs a clock read or a store
lookup to be understood: it carries the job, the planned instant and the attempt.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from cronctl.jobs.model import ExecutionStatus, MisfirePolicy, Origin

ExecKey = int
"""The core's name for one started attempt; the runtime maps it to a handle and a row."""


class SkipReason(enum.StrEnum):
    """Why a planned instant did not run: the reasons of a skip record
    (docs/behaviour.md#occurrences-and-the-ledger, "Every planned instant is accounted for"), plus
    ``removed``, which is not one."""

    OVERLAP = "overlap"  # the job's previous execution still runs (overlap_policy = skip)
    PAUSED = "paused"  # the job is paused cluster-wide
    MISFIRE = "misfire"  # in a missed set (section 4 "Misfires"), dropped by the policy
    UNRESOLVED_TARGET = "unresolved_target"  # the target could not be resolved at the fire
    SUPERSEDED = "superseded"  # queue_one kept a newer fire instead of this one
    EXPIRED = "expired"  # waited longer than misfire_threshold for a slot, queue_one or group
    CALENDAR = "calendar"  # a calendar of the job excludes the instant's local date
    UPSTREAM = "upstream"  # a dependent's parent ended otherwise, was skipped, or timed out
    # Not a ledger reason: a reload removed or disabled the job while this fire waited (a
    # retry or a queued fire of a job that no longer exists; logged at DEBUG).
    REMOVED = "removed"


class WaitReason(enum.StrEnum):
    SLOT = "slot"  # max_concurrent_jobs reached; FIFO
    GROUP = "group"  # another job of the serial group runs; FIFO per group
    QUEUE_ONE = "queue_one"  # runs right after the job's current execution
    JOB = "job"  # a manual/replay fire waiting for the job's own execution to end


@dataclass(frozen=True, slots=True)
class Fire:
    """Start this attempt now. The fire holds a concurrency slot (and its serial group)
    until the runtime reports it through ``on_complete`` or ``release``."""

    key: ExecKey
    job_id: str
    planned: datetime
    due: datetime  # planned + jitter (first attempts) or the retry's due time
    attempt: int
    origin: Origin
    occurrence_id: str
    recovered_from: int | None = None  # execution id of the interrupted row it replaces
    row: int | None = None  # a pending row already written for this attempt: claim it


@dataclass(frozen=True, slots=True)
class Skip:
    """Planned instants that do not run, and why: what the runtime writes as a skip record.

    One instant (``planned``; ``last`` is None), or a *run*: the consecutive planned
    instants of the job's schedule from ``planned`` (the oldest) to ``last`` (the newest),
    both included, ``count`` of them. A run is how a misfire set of any size stays one
    action (a per-second job missed for 12 days is one ``Skip``, not 10^6); only
    :class:`SkipReason.MISFIRE` and :class:`SkipReason.PAUSED` make runs. ``count_exact``
    is False when counting stopped at :data:`cronctl.core.timing.COUNT_CAP` (``count`` is
    then a lower bound; ``planned`` and ``last`` are still exact).

    The instants count as handled: for scheduled origins the cursor may move to
    :attr:`newest`. ``origin`` is ``misfire`` for instants a misfire policy dropped."""

    job_id: str
    planned: datetime
    origin: Origin
    reason: SkipReason
    last: datetime | None = None
    count: int = 1
    count_exact: bool = True
    detail: str | None = None  # what the ledger keeps beside the reason (which calendar)

    @property
    def newest(self) -> datetime:
        """The newest instant this skip covers."""
        return self.planned if self.last is None else self.last

    @property
    def reported(self) -> bool:
        """Whether this skip is an event and a metric of its own (``skipped``): not a
        ``removed`` one (no record), nor instants the misfire policy dropped, which their
        :class:`Missed` reports once per set. A late set's instant dropped behind the set's
        own fire is ``misfire`` with origin ``cron``: no policy dropped it, so it is."""
        if self.reason is SkipReason.REMOVED:
            return False
        return not (self.reason is SkipReason.MISFIRE and self.origin is Origin.MISFIRE)


@dataclass(frozen=True, slots=True)
class Enqueue:
    """This fire waits; a later decision starts it (or supersedes it).

    A wait for a slot (``reason`` slot) of a first attempt that has no row (not a
    recovered one) names its ``occurrence_id``: the :class:`Fire` that starts it later
    (attempt 1) carries the same, so the runtime may write its row while it waits."""

    job_id: str
    planned: datetime
    origin: Origin
    reason: WaitReason
    occurrence_id: str | None = None


@dataclass(frozen=True, slots=True)
class Missed:
    """A set of instants found missed (at start-up, when the store is back, or after a
    stall): the one INFO summary of docs/behaviour.md#misfires.

    ``count`` is how many the set holds (``count_exact`` false when counting stopped at a
    cap); ``dropped`` how many of them will not run under the policy (they follow as one
    :class:`Skip` run, reason ``misfire``, when the job is recorded: tracked, durable
    store); ``newest`` is the newest instant of the set."""

    job_id: str
    policy: MisfirePolicy
    count: int
    dropped: int
    newest: datetime
    count_exact: bool = True


@dataclass(frozen=True, slots=True)
class AdvanceCursor:
    """Persist ``planned`` as the job's last handled instant (only ever moves forward)."""

    job_id: str
    planned: datetime


@dataclass(frozen=True, slots=True)
class Abandon:
    """The attempt passed its timeout: stop it (kill commands, ignore Python results).
    Its guards are already released; a :class:`Finish` or :class:`DeadLetter` follows."""

    key: ExecKey
    job_id: str


@dataclass(frozen=True, slots=True)
class Finish:
    """Write the attempt's final status (succeeded, failed, abandoned or cancelled)."""

    key: ExecKey
    job_id: str
    status: ExecutionStatus
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Retry:
    """A new attempt of the same occurrence is scheduled at ``due``. The runtime writes
    it as a ``pending`` row now, so that a scheduler stopped or killed during the backoff
    still runs it (recovery claims that row, after the backoff, see
    :class:`RecoveredExecution`)."""

    job_id: str
    planned: datetime
    attempt: int
    due: datetime
    occurrence_id: str = ""
    origin: Origin = Origin.CRON


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """The last allowed attempt failed: write this attempt's row as ``dead_letter``."""

    key: ExecKey
    job_id: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CloseInterrupted:
    """A recovered row (pending or running when its node died) is closed before its
    occurrence runs again: ``lost`` when a next attempt follows (its outcome is unknown),
    ``cancelled`` when a cancel was requested (no attempt follows), else ``dead_letter``."""

    execution_id: int
    job_id: str
    status: ExecutionStatus


Action = (
    Fire | Skip | Enqueue | Missed | AdvanceCursor | Abandon | Finish | Retry | DeadLetter
    | CloseInterrupted
)


@dataclass(frozen=True, slots=True)
class Decision:
    """The actions to carry out now, in order, and when the core wants the next ``tick``
    (``None``: nothing is scheduled; wait for an event)."""

    actions: tuple[Action, ...]
    next_wake: datetime | None


# --- inputs read from the store ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobState:
    """What the store remembers about a job: the last handled planned instant and whether
    it is paused."""

    cursor: datetime | None = None
    paused: bool = False


@dataclass(frozen=True, slots=True)
class RecoveredExecution:
    """An execution row left ``pending`` or ``running`` by a node that is gone.

    A ``running`` row was interrupted: it is closed and the occurrence runs again as the
    next attempt. A ``pending`` row never started (a retry waiting for its backoff): that
    very attempt runs, claiming the row, once ``created_at`` (when the failure before it
    was recorded) plus the job's backoff for this attempt has passed."""

    execution_id: int
    job_id: str
    planned: datetime
    attempt: int
    origin: Origin
    status: ExecutionStatus  # pending (never started) or running (interrupted)
    created_at: datetime | None = None
    # ``cronctl cancel`` asked for it before its node died: the occurrence ends cancelled
    # and never runs again (a cancel racing a SIGKILL is not dropped).
    cancel_requested: bool = False
