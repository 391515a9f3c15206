"""What ``trigger``, ``cancel``, ``pause``/``resume`` and ``replay`` do to the state
database and the documents they answer with; the CLI commands and the API's ``POST``
endpoints both call these. User errors are :mod:`cronctl.errors` exceptions with the
CLI's one-line message (the API turns them into problem documents)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from cronctl.errors import CronctlError, UsageError
from cronctl.views.common import execution_json, iso_z

if TYPE_CHECKING:
    from cronctl.config import Config
    from cronctl.store.base import ExecutionRecord, NodeRecord, Requester, Store
    from cronctl.store.replay import Occurrence, Plan
    from cronctl.views import shapes

POLL = 0.05
# The first looks at a request: a scheduler on this host, woken, starts it within ~10 ms.
FIRST_POLLS = (0.01, 0.01, 0.02)
TAKE_TIMEOUT = 15.0  # a live scheduler polls every 0.5 s; this much silence means nobody will
LIVE_CHECK = 1.0  # seconds between looks at which nodes are live while waiting


class NoScheduler(CronctlError):
    """No live scheduler could take a trigger request."""

    exit_code = 1


class AlreadyFinal(CronctlError):
    """The execution has already ended; there is nothing to cancel."""

    exit_code = 1


# --- pause / resume ------------------------------------------------------------------------


def set_paused(store: Store, job: str, paused: bool) -> shapes.Paused:
    """Pause or resume ``job`` cluster-wide: ``{"job", "paused", "changed"}``."""
    state = store.get_schedule(job)
    was_paused = state is not None and state.paused
    if was_paused != paused:
        store.set_paused(job, paused)
    return {"job": job, "paused": paused, "changed": was_paused != paused}


# --- cancel --------------------------------------------------------------------------------


def require_cancellable(record: ExecutionRecord) -> None:
    if record.status.is_final:
        raise AlreadyFinal(f"execution {record.id} of job {record.job_id!r} already ended "
                           f"({record.status.value}); nothing to cancel")


def cancel_document(records: Sequence[ExecutionRecord]) -> shapes.Cancelled:
    """``cancel --json``: the executions a cancel was requested for."""
    return {"executions": [{**execution_json(r), "cancel_requested": True} for r in records]}


def request_cancel(store: Store, record: ExecutionRecord) -> shapes.Cancelled:
    """Flag one execution for cancellation (the scheduler running it polls the flag):
    :func:`cancel_document` of it, or :class:`AlreadyFinal`."""
    require_cancellable(record)
    if not store.request_cancel(record.id):
        latest = store.get_execution(record.id) or record
        raise AlreadyFinal(f"execution {latest.id} of job {latest.job_id!r} already ended "
                           f"({latest.status.value}); nothing to cancel")
    return cancel_document([store.get_execution(record.id) or record])


# --- trigger -------------------------------------------------------------------------------


def no_scheduler(config: Config) -> str:
    return (f"no live scheduler is registered in {config.database_display}; start "
            "'cronctl run', or run it in this process with 'cronctl trigger --here'")


def chain_for(config: Config, job_id: str) -> list[str]:
    """``--chain``: the jobs that depend on ``job_id``, directly or not, in run order. A
    configuration with violations has none (they are reported, one line)."""
    from cronctl.errors import ConfigError
    from cronctl.jobs.dependencies import chain_of
    from cronctl.jobs.loader import load_jobs

    loaded = load_jobs(config.job_settings)
    if not loaded.ok:
        raise ConfigError(f"--chain needs a valid configuration: {loaded.violations[0]}")
    return chain_of(loaded.jobs, job_id)


def enqueue_trigger(config: Config, store: Requester, job: str, now: datetime,
                    chained: Sequence[str] = ()) -> int:
    """A manual trigger request for a live scheduler; :class:`NoScheduler` without one.
    ``chained`` (``--chain``): the dependents that wait for this occurrence."""
    from cronctl.jobs.model import Origin

    live = store.live_nodes(now, config.heartbeat_interval * 3)
    if not live:
        raise NoScheduler(no_scheduler(config))
    # --chain: the occurrence's instant is fixed here, so the dependents wait for it
    request_id = store.enqueue_trigger(job, Origin.MANUAL, now=now,
                                       scheduled_at=now if chained else None)
    assert request_id is not None
    for dependent in chained:
        store.wait_chain(dependent, now, now=now)
    wake_local(live)
    return request_id


def wake_local(nodes: Sequence[NodeRecord]) -> None:
    """The nodes on this host take the request now, not at their next poll (a hint:
    :mod:`cronctl.wake`; the others take it at their poll, exactly once either way)."""
    import socket

    from cronctl.wake import wake

    host = socket.gethostname()
    wake(n.pid for n in nodes if n.host == host)


class WaitTimeout(CronctlError):
    """``trigger --wait --timeout``: the bound passed before the run ended."""

    exit_code = 1


@dataclass
class Waiting:
    """What ``trigger`` waits within: ``deadline`` (monotonic; ``None``: no bound but the
    liveness of the nodes) and how a node is judged live (``ttl``)."""

    ttl: timedelta
    deadline: float | None = None
    _checked: float = field(default=0.0, repr=False)
    _live: set[str] = field(default_factory=set, repr=False)

    def live(self, store: Requester) -> set[str]:
        """The live nodes, looked up at most once a second."""
        mono = time.monotonic()
        if mono - self._checked >= LIVE_CHECK:
            self._live = {n.node_id for n in store.live_nodes(datetime.now(UTC), self.ttl)}
            self._checked = mono
        return self._live

    def check(self, what: str) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise WaitTimeout(f"gave up waiting after --timeout: {what}")


def wait_taken(store: Requester, request_id: int, job_id: str, waiting: Waiting) -> int:
    """The execution a scheduler started for the request (it takes one within a second).
    A request taken by a node that then stopped answering is taken again by a live node
    (see ``Store.release_triggers``); with no live node left, it says so."""
    untaken_since = time.monotonic()
    first = iter(FIRST_POLLS)
    while True:
        request = store.get_trigger(request_id)
        if request is None:
            raise NoScheduler(f"trigger request {request_id} of job {job_id} is gone "
                              f"(pruned?); see 'cronctl history {job_id}'")
        if request.done:
            if request.execution_id is None:
                raise NoScheduler(f"job {job_id} did not run: {request.error or 'unknown'}")
            return request.execution_id
        taker = request.taken_by
        if taker is None or taker not in waiting.live(store):
            if taker is not None and not waiting.live(store):
                raise NoScheduler(f"node {taker} took the request for job {job_id} and "
                                  "stopped answering, and no live scheduler is left to take "
                                  "it again; start 'cronctl run'")
            if time.monotonic() - untaken_since > TAKE_TIMEOUT:
                raise NoScheduler(f"no scheduler took the request within {TAKE_TIMEOUT:.0f}s "
                                  f"(is job {job_id!r} defined on the running nodes?)")
        else:
            untaken_since = time.monotonic()
        waiting.check(f"job {job_id} was not started yet (request {request_id})")
        time.sleep(next(first, POLL))


def trigger_document(config: Config, store: Requester, job: str, now: datetime,
                     chained: Sequence[str] = ()
                     ) -> tuple[shapes.Triggered, ExecutionRecord | None]:
    """Queue a manual run and wait until a scheduler started it: ``trigger --json`` (without
    ``--wait``), ``{"job", "request", "queued", "execution_id", "chained"}``, and the
    execution."""
    request_id = enqueue_trigger(config, store, job, now, chained)
    execution_id = wait_taken(store, request_id, job, Waiting(config.heartbeat_interval * 3))
    doc: shapes.Triggered = {"job": job, "request": request_id, "queued": True,
                             "execution_id": execution_id,
           "chained": list(chained)}
    return doc, store.get_execution(execution_id)


def final_document(job: str, request_id: int, record: ExecutionRecord,
                   chained: Sequence[str] = ()) -> shapes.Finished:
    """``trigger --wait --json``: the occurrence's final execution."""
    return {"job": job, "request": request_id, "execution": execution_json(record),
            "chained": list(chained)}


# --- replay --------------------------------------------------------------------------------

DEFAULT_MAX = 100
_TICK = timedelta(microseconds=1)


def replay_window(start: datetime, end: datetime, now: datetime) -> None:
    """:class:`UsageError` unless ``(start, end]`` is a past window."""
    if end > now:
        raise UsageError(f"--until {iso_z(end)} is in the future; replay only queues "
                         "occurrences that are already due (future ones fire on their own)")
    if start >= end:
        raise UsageError(f"--since {iso_z(start)} must be before --until {iso_z(end)}")


@dataclass(frozen=True)
class Replayed:
    job: str
    start: datetime
    end: datetime
    dry_run: bool
    shown: Sequence[Occurrence]  # queued, or (dry run) what would be
    skipped: Sequence[Occurrence]  # already handled
    plan: Plan
    live: bool = True  # a live scheduler will take the requests
    tracked: bool = True
    warnings: Sequence[str] = field(default=())  # each line as printed on stderr
    # when a scheduler first had the job: nothing before it is offered (None: not yet)
    first_seen: datetime | None = None
    chained: Sequence[str] = ()  # --chain: the dependents run after each queued one

    def to_json(self) -> shapes.Replay:
        """``replay --json`` and ``POST /api/v1/jobs/{id}/replay``."""
        return {
            "job": self.job, "since": iso_z(self.start), "until": iso_z(self.end),
            "dry_run": self.dry_run,
            "first_scheduled": iso_z(self.first_seen),
            "queued": [_occurrence_json(o) for o in self.shown],
            "already_handled": [_occurrence_json(o) for o in self.skipped],
            "left_out": self.plan.left_out, "left_out_at_least": self.plan.scan_truncated,
            "chained": list(self.chained),
        }


def _occurrence_json(o: Occurrence) -> shapes.Occurrence:
    doc: shapes.Occurrence = {"scheduled_at": iso_z(o.scheduled_at),
                           "occurrence_id": o.occurrence_id}
    if o.handled is not None:
        doc["reason"] = o.handled
    else:
        doc["request"] = o.request
    return doc


def replay(config: Config, store: Store | None, job: str, start: datetime, end: datetime,
           *, max_count: int, dry_run: bool, now: datetime,
           chained: Sequence[str] = ()) -> Replayed:
    """Plan (and unless ``dry_run``, queue) the occurrences of ``(start, end]`` that never
    ran. ``store`` may be ``None`` for a dry run on a database that does not exist yet.
    ``chained`` (``--chain``, :func:`chain_for`): the dependents that wait for each."""
    from cronctl.jobs.checks import job_schedule
    from cronctl.jobs.loader import find_job
    from cronctl.store.replay import enqueue, handled_in, plan

    replay_window(start, end, now)
    definition = find_job(config.job_settings, job)  # NotFoundError: exit 3
    state = store.get_schedule(job) if store is not None else None
    first_seen = state.first_seen if state is not None else None
    # Nothing of the job was planned before a scheduler first had it: offer nothing from
    # before (the window starts just before first_seen, since it is exclusive).
    begin = start if first_seen is None else max(start, first_seen - _TICK)
    result = plan(job, job_schedule(definition), begin, end, max_count,
                  handled_in(store, job))
    queued: list[Occurrence] = []
    skipped = list(result.handled)
    live = True
    if not dry_run and result.queue:
        assert store is not None
        queued, raced = enqueue(store, job, result.queue, now)
        for o in queued:  # their dependents wait for the replayed executions
            for dependent in chained:
                store.wait_chain(dependent, o.scheduled_at, now=now)
        skipped = sorted([*skipped, *raced], key=lambda o: o.scheduled_at)
        live = bool(store.live_nodes(now, config.heartbeat_interval * 3))
    warnings: list[str] = []
    if not definition.tracked:
        warnings.append(f"warning: job {job} is untracked (tracked = false): its executions "
                        "are not recorded, so only earlier replay requests count as handled")
    if first_seen is not None and first_seen > start:
        warnings.append(f"note: job {job} was first scheduled at {iso_z(first_seen)}: "
                        "nothing before that is offered")
    if queued and not live:
        warnings.append("warning: no live scheduler right now; the requests wait until "
                        "'cronctl run' starts")
    return Replayed(job, start, end, dry_run, list(result.queue) if dry_run else queued,
                    skipped, result, live, definition.tracked, warnings, first_seen,
                    list(chained))
