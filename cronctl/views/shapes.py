"""The shape of every JSON document the CLI prints with ``--json`` and the HTTP API
answers: one ``TypedDict`` per shape, and nothing else.

The serializers of :mod:`cronctl.views` are typed with these (``mypy --strict`` holds
each dict they build to its shape: no key missing, none extra, every value of its type),
and ``cronctl serve`` derives the OpenAPI document's response schemas from the same
classes (:mod:`cronctl.serve.schemas`), so the document cannot drift from what the
commands print. Instants are ISO 8601 UTC strings ending in ``Z``
(:func:`cronctl.views.common.iso_z`); ``None`` is JSON ``null``.

``typing_extensions.TypedDict`` rather than ``typing``'s: before Python 3.12 only it keeps
what pydantic needs to build a JSON Schema from the class.
"""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

# --- executions and their log lines ---------------------------------------------------


class Execution(TypedDict):
    """One execution (``history --json``, ``executions/{id}``)."""

    id: int
    job: str
    occurrence_id: str
    scheduled_at: str
    started_at: str | None
    finished_at: str | None
    status: str
    attempt: int
    node: str
    origin: str
    error: str | None
    exit_code: int | None
    signal: str | None
    cpu_seconds: float | None
    max_rss_bytes: int | None
    fenced_status: str | None
    fenced_at: str | None


class Skip(TypedDict):
    """One planned instant a skip record covers, in a history page (``id`` is null: it is
    not an execution; ``skip_id`` is the stored record's)."""

    id: None
    skip_id: int
    job: str
    occurrence_id: str
    scheduled_at: str
    started_at: None
    finished_at: None
    status: str
    reason: str
    attempt: int
    node: str
    origin: str
    error: None
    detail: str | None


class History(TypedDict):
    """``history --json``: executions and skip records, newest first."""

    executions: list[Execution | Skip]


class ExecutionsPage(History):
    """``GET /api/v1/executions``: a page of :class:`History`; pass ``next_cursor`` back as
    ``cursor`` for the next one (``null``: this was the last)."""

    next_cursor: str | None


class LogLine(TypedDict):
    seq: int
    at: str
    level: str
    message: str


class Logs(TypedDict):
    """``logs EXECUTION_ID --json``."""

    execution: Execution
    lines: list[LogLine]


# --- jobs ------------------------------------------------------------------------------


class JobRow(TypedDict):
    """One job (``list --json``, ``jobs/{id}``)."""

    id: str
    cron: str
    resolved: str
    timezone: str
    mode: str
    target: str
    enabled: bool
    paused: bool
    next_fire: str | None
    last_status: str | None
    description: str | None
    calendar: list[str]
    after: list[str]


class Jobs(TypedDict):
    """``list --json``."""

    jobs: list[JobRow]


class Fire(TypedDict):
    local: str
    utc: str
    note: str | None


# "from" is a keyword: the functional form.
Next = TypedDict("Next", {
    "job": str | None,
    "expression": str,
    "resolved": str,
    "hash_id": str | None,
    "timezone": str,
    "description": str,
    "dst_gap": str | None,
    "dst_fold": str | None,
    "from": str,
    "jitter_seconds": float | None,
    "fires": list[Fire],
    "excluded": list[Fire],
})
Next.__doc__ = "``next JOB --json``: the next fires, and those a calendar excludes."


class Why(TypedDict):
    """``why JOB AT --json``."""

    job: str
    scheduled_at: str | None
    occurrence_id: str | None
    outcome: str
    reason: str | None
    detail: str | None
    executions: list[Execution]
    expression: str
    resolved: str


# --- status ------------------------------------------------------------------------------


class Node(TypedDict):
    id: str
    host: str
    pid: int
    started_at: str
    heartbeat_at: str


class Progress(TypedDict):
    done: float
    total: float | None
    message: str | None


class Running(TypedDict):
    id: int
    job: str
    status: str
    node: str
    scheduled_at: str
    started_at: str | None
    attempt: int
    origin: str
    progress: Progress | None
    cancel_requested: bool


class Queued(TypedDict):
    id: int
    job: str
    origin: str
    scheduled_at: str | None
    requested_at: str
    taken_by: str | None
    waiting_on_parents: bool


class NextFire(TypedDict):
    job: str
    next_fire: str | None


class Containment(TypedDict):
    mechanism: str
    cgroup: str | None
    reason: str | None


class FailingJob(TypedDict):
    job: str
    status: str
    scheduled_at: str
    error: str | None


class LateJob(TypedDict):
    job: str
    planned: str
    late_after: float


class NotifyFailing(TypedDict):
    node: str
    since: str
    last_failure_at: str
    failures: int
    last_error: str | None
    live: bool


class Attention(TypedDict):
    failing: list[FailingJob]
    late: list[LateJob]
    notify_failing: list[NotifyFailing]


class Status(Attention):
    """``status --json``."""

    database: str
    shared_state: bool
    nodes: list[Node]
    running: list[Running]
    queued: list[Queued]
    next: list[NextFire]
    paused: list[str]
    disabled: list[str]
    containment: Containment | None


# --- actions ------------------------------------------------------------------------------


class Paused(TypedDict):
    """``pause``/``resume``: ``changed`` is false when it already was so."""

    job: str
    paused: bool
    changed: bool


class CancelledExecution(Execution):
    cancel_requested: bool


class Cancelled(TypedDict):
    """``cancel --json``: the executions a cancel was requested for."""

    executions: list[CancelledExecution]


class Triggered(TypedDict):
    """``trigger --json``: the request, and the execution a scheduler started for it."""

    job: str
    request: int
    queued: bool
    execution_id: int
    chained: list[str]


class Finished(TypedDict):
    """``trigger --wait --json``: the occurrence's final execution."""

    job: str
    request: int
    execution: Execution
    chained: list[str]


class Occurrence(TypedDict):
    """An occurrence of a replay: ``request`` once queued, ``reason`` when already handled
    (one of the two)."""

    scheduled_at: str
    occurrence_id: str
    reason: NotRequired[str]
    request: NotRequired[int | None]


class Replay(TypedDict):
    """``replay --json``."""

    job: str
    since: str
    until: str
    dry_run: bool
    first_scheduled: str | None
    queued: list[Occurrence]
    already_handled: list[Occurrence]
    left_out: int
    left_out_at_least: bool
    chained: list[str]
