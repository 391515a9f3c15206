"""Store writes the I/O thread makes in batches: skip records, cursors and final statuses.

One transaction per batch instead of one per job: on SQLite the write lock is then held
for one short transaction, not hundreds, and the scheduler thread (which writes the
execution rows before dispatch) seldom waits for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from cronctl.ids import CONCURRENT_AFTER_PARTITION, utc_iso
from cronctl.jobs.model import ExecutionStatus, ResourceUsage
from cronctl.runtime.fire.wakelog import recorded_lines
from cronctl.runtime.logsetup import ids
from cronctl.store.base import ExecutionRecord, SkipRun, Store, StoreUnavailable, Transition

log = logging.getLogger("cronctl.runtime")
_LIVE = (ExecutionStatus.PENDING, ExecutionStatus.RUNNING)
_PENDING = (ExecutionStatus.PENDING,)


class CursorBatch:
    """Handled instants, written by the I/O thread: the skip records of instants that did
    not run, then the cursors, coalesced per job (the newest instant wins). every_instance
    jobs also keep this node's own cursor. Deferring them is safe: the execution row, not
    the cursor, dedups a fire, and a skip record is written before the cursor passes it."""

    def __init__(self, node_id: str = "") -> None:
        self._node_id = node_id
        self._lock = threading.Lock()
        self._pending: dict[str, datetime] = {}
        self._node: dict[str, datetime] = {}
        self._skips: list[SkipRun] = []

    def add(self, job_id: str, planned: datetime, *, per_node: bool = False) -> None:
        with self._lock:
            self._add(job_id, planned, per_node)

    def _add(self, job_id: str, planned: datetime, per_node: bool) -> None:
        old = self._pending.get(job_id)
        if old is None or planned > old:
            self._pending[job_id] = planned
        if per_node:
            old = self._node.get(job_id)
            if old is None or planned > old:
                self._node[job_id] = planned

    def skip(self, run: SkipRun) -> None:
        with self._lock:
            self._skips.append(run)

    def flush(self, store: Store) -> None:
        """Write every pending skip record and cursor; on failure keep them all for the
        next flush (newer instants that arrived meanwhile win; a skip record written
        twice is recorded once)."""
        with self._lock:
            batch, self._pending = self._pending, {}
            node, self._node = self._node, {}
            skips, self._skips = self._skips, []
        if not batch and not node and not skips:
            return
        try:
            if skips:
                store.record_skips(skips)
            store.advance_cursors(batch, node_id=self._node_id, node_cursors=node)
        except BaseException:
            with self._lock:
                self._skips[:0] = skips
                for job_id, planned in batch.items():
                    self._add(job_id, planned, False)
                for job_id, planned in node.items():
                    self._add(job_id, planned, True)
            raise


class FinalBatch:
    """Final statuses of ended executions, written by the I/O thread in one transaction
    per batch, each followed by the drain of the execution's buffered log lines.

    ``add`` is called on the scheduler thread; the first addition to an empty batch
    hands one flush to ``later`` (the I/O thread's timers), ``delay`` seconds on, so the
    endings of a burst cost a few transactions, not one per wake: on SQLite each one
    holds the write lock the scheduler thread needs for the next fires' rows. An ending
    that releases guard locks (``prompt``: the next fire of its serial group or job
    waits for that release) hands its flush to ``submit`` at once."""

    def __init__(self, store: Store, submit: Callable[[Callable[[], object]], None],
                 drain: Callable[[int], object], clock: Callable[[], datetime], *,
                 later: Callable[[float, Callable[[], object]], None] | None = None,
                 delay: float = 0.0) -> None:
        self._store = store
        self._submit = submit
        self._later = later
        self._delay = delay
        self._drain = drain
        self._clock = clock
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one write at a time (I/O thread or scheduler thread)
        # (execution, status, error, token, job id: its `finished` line once written)
        self._pending: list[tuple[int, ExecutionStatus, str | None, int | None, str]] = []
        self._usage: dict[int, ResourceUsage] = {}  # a command's figures, by execution
        self._starts: list[tuple[int, datetime]] = []
        self._restamps: list[tuple[int, datetime]] = []
        self._lost: set[int] = set()  # started here, but the row was not pending any more
        self._ended: dict[int, datetime] = {}  # when each final status was known here
        # Told of each final status the store refused (the watch's ``fenced``; I/O thread).
        self.on_fenced: Callable[[ExecutionRecord, ExecutionStatus, datetime], None] | None = (
            None)

    def add(self, execution_id: int, status: ExecutionStatus, error: str | None,
            token: int | None = None, *, prompt: bool = False,
            usage: ResourceUsage | None = None, job_id: str = "",
            ended: datetime | None = None) -> None:
        """``token``: the fencing token the attempt was claimed with (the store refuses
        the final status if the row no longer carries it). ``usage``: a command's
        figures, written with the status. ``job_id``: its ``finished`` line is logged
        once the status is written (:func:`~cronctl.runtime.fire.wakelog.recorded_lines`)."""
        with self._lock:
            first = not self._pending and not self._starts
            self._pending.append((execution_id, status, error, token, job_id))
            self._ended[execution_id] = ended or self._clock()
            if usage is not None:
                self._usage[execution_id] = usage
        if first or prompt:
            self._schedule(prompt)

    def started(self, execution_id: int, at: datetime) -> None:
        """A row written ``pending`` ahead of its attempt (see
        :mod:`cronctl.runtime.fire.waiters`) was dispatched at ``at``: it becomes ``running``
        with the next flush, ahead of any final status."""
        with self._lock:
            first = not self._pending and not self._starts
            self._starts.append((execution_id, at))
        if first:
            self._schedule(False)

    def restamp(self, execution_id: int, at: datetime) -> None:
        """A ``running`` row written with its guard locks started at ``at`` (after the
        commit that took them). Written at once, and always before the execution's final
        status: a final written first would leave the earlier stamp (taken before the
        fencing token), and the tokens of a job would no longer rise with its starts."""
        with self._lock:
            self._restamps.append((execution_id, at))
        self._schedule(True)

    def _schedule(self, prompt: bool) -> None:
        """The first addition to an empty batch (or a prompt one) hands a flush on."""
        if prompt or self._later is None or self._delay <= 0:
            self._submit(self.flush)
        else:
            self._later(self._delay, self.flush)

    def flush(self) -> None:
        """Write the batch. While the store is unreachable keep it (ahead of newer ones)
        for the next flush: a final status lost to an outage would leave its row
        ``running``, and recovery would run that occurrence again.

        An execution that started and ended within one batch (a short handler in a
        burst) is written once: ``pending`` straight to its final status, with its
        start time.

        Any thread may call it: writes queue on one lock, so once it returns the guard
        locks of this node's ended executions are free (the scheduler thread flushes
        before taking guard locks, so a serial group handed to a local waiter is not
        found still held by the execution that just left it)."""
        with self._writing:
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            starts, self._starts = self._starts, []
            restamps, self._restamps = self._restamps, []
        if not batch and not starts and not restamps:
            return
        begun = dict(starts)
        stamped = dict(restamps)
        finals: list[tuple[int, ExecutionStatus, str | None, int | None, datetime | None,
                           bool, str]] = []
        for eid, status, error, token, job_id in batch:
            if eid in self._lost:  # its start was refused: the row is someone else's
                self._lost.discard(eid)
                self._drain(eid)
                self._fenced(eid, status, token)
                continue
            when = begun.pop(eid, None)
            if when is not None:
                finals.append((eid, status, error, token, when, True, job_id))
            else:  # (a restamp ending in this batch rides with its final status)
                finals.append((eid, status, error, token, stamped.pop(eid, None), False,
                               job_id))
        at = self._clock()
        changes = [Transition(eid, _PENDING, ExecutionStatus.RUNNING, started_at=when)
                   for eid, when in begun.items()]
        changes += [Transition(eid, ExecutionStatus.RUNNING, ExecutionStatus.RUNNING,
                               started_at=when) for eid, when in stamped.items()]
        with self._lock:
            usage = {eid: self._usage.pop(eid) for eid, *_r in finals if eid in self._usage}
        changes += [Transition(eid, _PENDING if pending else _LIVE, status, error, when, at,
                               token, usage.get(eid))
                    for eid, status, error, token, when, pending, _job in finals]
        try:
            done = self._store.transitions(changes)
        except StoreUnavailable:
            with self._lock:  # (the fenced ones were reported already)
                self._pending[:0] = [(e, st, err, tok, j) for e, st, err, tok, _w, _p, j
                                     in finals]
                self._usage.update(usage)
                self._starts[:0] = starts
                self._restamps[:0] = restamps
            raise
        except BaseException:
            for eid, *_rest in finals:
                self._drain(eid)
            raise
        for eid, ok in zip(begun, done, strict=False):
            if not ok:
                self._lost.add(eid)
                log.warning("exec=%s started here, but its row was no longer pending "
                            "(claimed or closed elsewhere)", eid)
        written: list[tuple[str, int, ExecutionStatus, str | None]] = []
        for (eid, status, error, token, _when, _p, job_id), ok in zip(
                finals, done[len(begun) + len(stamped):], strict=True):
            self._drain(eid)
            if job_id:
                written.append((job_id, eid, status, error))
            if ok:
                with self._lock:
                    self._ended.pop(eid, None)
            else:  # how it ended here, then that the store refused it
                recorded_lines(log, written)
                written = []
                self._fenced(eid, status, token)
        recorded_lines(log, written)

    def _fenced(self, execution_id: int, status: ExecutionStatus, token: int | None) -> None:
        """A final status refused as stale: logged, kept beside the row with when it really
        ended here (not when the store was reachable again), and told."""
        with self._lock:
            at = self._ended.pop(execution_id, None) or self._clock()
        row = report_fenced(self._store, execution_id, status, token, at)
        if row is not None and self.on_fenced is not None:
            try:
                self.on_fenced(row, status, at)
            except Exception:
                log.exception("fenced: reporting exec=%s failed", execution_id)


def concurrent_note(row: ExecutionRecord, ended: datetime,
                    newer: list[ExecutionRecord]) -> str | None:
    """When the attempt of ``row``, which really ran from its start until ``ended``, ran
    beside one of the ``newer`` attempts of its occurrence: the mark that says so
    (:data:`~cronctl.ids.CONCURRENT_AFTER_PARTITION`, with both intervals), else None."""
    if row.started_at is None:
        return None
    for other in newer:
        if other.started_at is None or other.started_at >= ended:
            continue
        if other.finished_at is not None and other.finished_at <= row.started_at:
            continue
        return (f"{CONCURRENT_AFTER_PARTITION}: attempt {row.attempt} ran on node "
                f"{row.node_id} until {utc_iso(ended)}, beside attempt {other.attempt} "
                f"(exec={other.id}, node {other.node_id}) started at "
                f"{utc_iso(other.started_at)}")
    return None


def report_fenced(store: Store, execution_id: int, status: ExecutionStatus,
                  token: int | None, at: datetime) -> ExecutionRecord | None:
    """The store refused the final status of an attempt this node ran: its row was
    closed (or claimed) elsewhere, by the recovery of a node that judged this one dead.
    docs/behaviour.md#single-instance-jobs-and-fencing: never silently; name both executions, and
    keep the refused status on the row (``fenced_status``, ``fenced_at``). Returns the row as it is
    now."""
    row = store.get_execution(execution_id)
    if row is None:
        log.warning("fenced: exec=%s ended %s here, but its row is gone", execution_id,
                    status.value)
        return None
    newer = [r for r in store.executions_of_occurrence(row.job_id, row.occurrence_id)
             if r.attempt > row.attempt and r.scope_node == row.scope_node]
    note = concurrent_note(row, at, newer)
    error = None
    if note is not None and row.fenced_status is None:
        error = f"{row.error}; {note}" if row.error else note
        log.error("%s: job=%s exec=%s; two attempts of occurrence %s ran at the same time "
                  "(docs/liveness.md)", note, row.job_id, execution_id, row.occurrence_id,
                  extra=ids(row.job_id, execution_id))
    if store.record_fenced(execution_id, status, at, error=error):
        row = store.get_execution(execution_id) or row
    where = (f"it was recovered elsewhere as exec={newer[-1].id} (attempt "
             f"{newer[-1].attempt}, node {newer[-1].node_id}, token {newer[-1].fencing_token})"
             if newer else "it was closed elsewhere and no newer attempt exists")
    log.warning("fenced: job=%s exec=%s (attempt %d, token %s) ended %s here, but the store "
                "refused that final status: %s; the row stays %s", row.job_id,
                execution_id, row.attempt, token, status.value, where, row.status.value,
                extra=ids(row.job_id, execution_id))
    return row
