"""The fire path's part of the :class:`~cronctl.store.base.Store` Protocol: what a
scheduler writes as it decides and runs fires (schedule rows, the election of an
execution row, its compare-and-set status, guard locks, log lines and progress), the
state it reads back to decide (cursors, paused jobs, cancel requests), and the flags an
operator sets for it (pause, cancel). Same conventions as :mod:`cronctl.store.base`."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from cronctl.jobs.model import ExecutionStatus, JobDefinition, Origin
from cronctl.store.writerecords import Fenced, GuardLock, LogEntry, NewExecution, Transition


class FirePath(Protocol):
    """Writes of the fire path.

    Invariant: every decision that must happen once happens once, whoever races for it
    (threads, processes, nodes): of concurrent callers of an election
    (:meth:`try_insert_execution`, :meth:`insert_guarded`), a compare-and-set
    (:meth:`transition`, :meth:`claim_execution`) or a guard lock, exactly one wins, and
    the database decides who. Cursors never move backwards and a job's fencing tokens
    strictly increase. A batch method is ONE transaction: all of it or none."""

    # --- schedules -------------------------------------------------------------------

    def save_definitions(
        self, jobs: Sequence[JobDefinition], *, now: datetime | None = None
    ) -> None:
        """Upsert one schedule row per job with a JSON snapshot of its definition.

        Cursor, paused flag and fencing counter of existing rows are kept. Rows of jobs
        not in ``jobs`` are left alone (a job that comes back keeps its cursor)."""
        ...

    def advance_cursor(self, job_id: str, planned_at: datetime) -> datetime:
        """Set the cursor to ``max(cursor, planned_at)`` and return the resulting cursor.

        Never moves backwards, also when two nodes race. Creates the row if missing."""
        ...

    def advance_cursors(
        self, cursors: Mapping[str, datetime], *, node_id: str | None = None,
        node_cursors: Mapping[str, datetime] | None = None,
    ) -> None:
        """:meth:`advance_cursor` for every ``job id -> planned instant``, and the same
        for ``node_id``'s own cursors of every_instance jobs (``node_cursors``), in ONE
        transaction (all or nothing). Neither kind ever moves backwards."""
        ...

    def node_cursors(self, node_id: str) -> dict[str, datetime]:
        """``job id -> cursor`` of ``node_id``'s every_instance jobs: each node catches up
        from its own cursor, never from another node's."""
        ...

    def job_states(self) -> dict[str, tuple[datetime | None, bool]]:
        """``job id -> (cursor, paused)`` of every schedule row, without decoding the
        definitions (what the scheduler needs at start-up)."""
        ...

    def paused_job_ids(self) -> set[str]:
        """Ids of the paused jobs (the scheduler polls this; cheap)."""
        ...

    def set_paused(self, job_id: str, paused: bool) -> None:
        """Pause or resume the job cluster-wide. Creates the row if missing."""
        ...

    def next_fencing_token(self, job_id: str) -> int:
        """Atomically increment and return the job's fencing counter (first call: 1).

        Tokens of one job strictly increase across every caller, thread and node."""
        ...

    # --- executions ------------------------------------------------------------------

    def try_insert_execution(
        self,
        *,
        job_id: str,
        occurrence_id: str,
        scheduled_at: datetime,
        attempt: int,
        origin: Origin,
        node_id: str,
        scope_node: str | None,
        fencing_token: int | None = None,
        target: str = "",
        status: ExecutionStatus = ExecutionStatus.PENDING,
        started_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int | None:
        """The election: insert the attempt unless it exists; return the new row id if this
        caller won, ``None`` if a row for the same (job, occurrence, scope, attempt)
        already exists (inserted by anyone, any time).

        ``scope_node=None`` means single_instance (the row is unique per occurrence and
        attempt, cluster-wide); a node id means every_instance (unique per occurrence,
        node and attempt). Exactly one of any number of concurrent callers wins."""
        ...

    def transition(
        self,
        execution_id: int,
        expected: ExecutionStatus | Collection[ExecutionStatus],
        new: ExecutionStatus,
        *,
        error: str | None = None,
        started_at: datetime | None = None,
        finished_at: datetime | None = None,
        fencing_token: int | None = None,
    ) -> bool:
        """Compare-and-set the status: change it to ``new`` only if it currently is
        ``expected`` (or one of them). Returns whether this call changed it; of two racing
        callers exactly one wins. ``error``/``started_at``/``finished_at`` are written only
        when given (and only when the transition happens).

        Fencing: with ``fencing_token`` (the token the writer claimed the row with) the
        change also requires the row to carry that token, so a writer whose claim is stale
        changes nothing. A row that recovery closed (its node was judged dead) is not
        ``running`` any more, so the late final status of its first node is refused
        either way; the runtime logs that refusal
        (docs/behaviour.md#single-instance-jobs-and-fencing)."""
        ...

    def claim_execution(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime,
    ) -> bool:
        """Start a ``pending`` row written ahead (a retry waiting for its backoff, or one
        left by a scheduler that is gone): compare-and-set it to ``running`` and record
        who runs it (``node_id``, ``fencing_token``) and since when. False if it is not
        ``pending`` any more; of racing callers exactly one wins."""
        ...

    def insert_executions(self, rows: Sequence[NewExecution]) -> list[int | None]:
        """:meth:`try_insert_execution` for each row, in ONE transaction: the new row id
        where this caller won, ``None`` where a row with the same (job, occurrence, scope,
        attempt) already existed (inserted by anyone, any time, or earlier in ``rows``).
        Results are in the order of ``rows``."""
        ...

    def discard_pending(self, execution_ids: Collection[int]) -> int:
        """Delete those of ``execution_ids`` that are still ``pending`` (rows written for
        attempts that then never started: their instants get skip records instead, or
        the misfire policy decides at the next start); returns how many were deleted."""
        ...

    def transitions(self, changes: Sequence[Transition]) -> list[bool]:
        """:meth:`transition` for each change, in order, in ONE transaction; whether each
        one happened. A change to a final status (neither ``pending`` nor ``running``)
        that happens also releases the guard locks its execution holds, in the same
        transaction (a refused one releases nothing: they may be another claimant's)."""
        ...

    def record_fenced(self, execution_id: int, status: ExecutionStatus, at: datetime, *,
                      error: str | None = None) -> bool:
        """Keep ``status``, a final status the store refused as stale (the attempt was
        taken over, docs/behaviour.md#durability-and-clusters), beside the row's own:
        ``fenced_status`` and ``fenced_at`` (when it really ended); ``error``, when given, replaces
        the row's error in the same write (what was learnt: an overlap with the next attempt). The
        first one kept stays; the row's status never changes. False when there is no such
        row or one was kept already."""
        ...

    # --- guard locks (cluster-wide serial groups and single_instance overlap) ----------

    def insert_guarded(self, rows: Sequence[NewExecution]
                       ) -> list[int | Fenced | str | None]:
        """:meth:`insert_executions`, where a row with ``locks`` is inserted only together
        with every one of its guard locks (``INSERT ... ON CONFLICT DO NOTHING`` on the
        key), all in ONE transaction: the new row id where this caller won the row and its
        locks (a :class:`Fenced` for a ``fenced`` row: the job's next fencing token was
        taken after the locks, in that transaction, and written on the row); ``None``
        where the row already existed, or where it is a scheduled first attempt whose
        instant a skip record covers (a peer decided it already); the key of a lock
        that another execution holds (then neither the row nor any lock was written).
        Of any number of concurrent callers taking one key, exactly one gets it."""
        ...

    def claim_guarded(
        self, execution_id: int, *, node_id: str, fencing_token: int | None,
        started_at: datetime, locks: Sequence[str], fence: str | None = None,
    ) -> bool | Fenced | str:
        """:meth:`claim_execution` together with ``locks``, in ONE transaction: True if the
        row was claimed and the locks taken (a :class:`Fenced` when ``fence`` names the
        row's job: its next fencing token was taken after the locks, in that transaction,
        in place of ``fencing_token``); False if the row is not ``pending`` any more; the
        key of a lock another execution holds (the row stays ``pending``)."""
        ...

    def guard_locks(self) -> list[GuardLock]:
        """Every held lock, by key (``status`` and tests)."""
        ...

    # --- what an attempt records as it runs, and cancel requests -----------------------

    def record_process(self, execution_id: int, pgid: int, process_start: str | None) -> None:
        """Record the process group a command attempt runs in and its leader's identity
        (:mod:`cronctl.processes`), so that recovery on the same host can end what the
        attempt left running."""
        ...

    def record_progress(
        self, execution_id: int, done: float, total: float | None, message: str | None
    ) -> None:
        """Overwrite the execution's progress snapshot."""
        ...

    def append_logs(self, batch: Sequence[LogEntry]) -> None:
        """Append log lines; each execution's lines get consecutive ``seq`` numbers in the
        order given. Lines of an execution that does not exist are dropped silently
        (an untracked fire has no row)."""
        ...

    def request_cancel(self, execution_id: int) -> bool:
        """Flag a ``pending`` or ``running`` execution for cancellation. Returns False if it
        does not exist or has already ended (nothing is changed then)."""
        ...

    def cancel_requested(self, execution_ids: Collection[int]) -> set[int]:
        """The subset of ``execution_ids`` flagged for cancellation (the runtime polls)."""
        ...


__all__ = ["FirePath"]
