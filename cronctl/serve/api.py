"""``/api/v1``: JSON with exactly the CLI's ``--json`` shapes (every document comes from
:mod:`cronctl.views`), RFC 9457 problems for errors (:mod:`cronctl.serve.problems`).

Times and statuses are taken as text and read by the CLI's own parsers
(:mod:`cronctl.argtypes`), so ``?since=2h`` means what ``--since 2h`` means and a bad
value gets the CLI's message; integers are declared with their bounds
(:data:`cronctl.serve.schemas.INTEGERS`), and a bad one gets the CLI's message too.
Each operation documents its document (:mod:`cronctl.views.shapes`) and the problems it
may answer (:func:`cronctl.serve.schemas.documented`). Reads run under the deadline of
:meth:`ServeContext.bounded`; ``POST`` endpoints go through :func:`guard.audited`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field

from cronctl import argtypes
from cronctl.errors import NotFoundError
from cronctl.serve.guard import audited, context, principal
from cronctl.serve.schemas import INTEGERS, documented
from cronctl.views import actions, shapes
from cronctl.views.history import decode_cursor, encode_cursor, history_document, read_history
from cronctl.views.jobs import list_document, list_rows
from cronctl.views.logs import logs_document
from cronctl.views.next import job_target, next_fires, parse_from, to_json
from cronctl.views.status import collect
from cronctl.views.why import decide, why_document

router = APIRouter(prefix="/api/v1")
DEFAULT_LIMIT = 20  # = cronctl history --limit
ExecutionId = Annotated[int, Path(ge=INTEGERS["execution_id"].minimum,
                                  le=INTEGERS["execution_id"].maximum,
                                  description="An execution's id")]
# Text the CLI's parsers read (a value they refuse is a 400 with their message).
_AGO = ("an ISO 8601 time (2026-03-08T07:00:00Z) before the year 9000, 'now', or a "
        "duration under 100 years meaning that long ago (2h, 3d)")
Since = Annotated[str | None, Query(description="Window start: " + _AGO)]
Until = Annotated[str | None, Query(description="Window end (inclusive, after since): " + _AGO)]
JobFilter = Annotated[str | None, Query(description="Only this job's")]
Limit = Annotated[int | None, INTEGERS["limit"].query(
    f"At most this many, newest first (default {DEFAULT_LIMIT})")]


class ReplayBody(BaseModel):
    since: str = Field(description="Window start (exclusive): ISO 8601 or relative (2h, 3d).")
    until: str | None = Field(None, description="Window end (inclusive), default now.")
    dry_run: bool = Field(False, description="Show what would be queued; write nothing.")
    max: int = Field(actions.DEFAULT_MAX, ge=1, le=100_000,
                     description="Queue at most this many occurrences (the oldest).")


def _time(text: str | None, now: datetime, what: str) -> datetime | None:
    return None if text is None else argtypes.parse_time(text, now, what=what)


# --- jobs ----------------------------------------------------------------------------------


@router.get("/jobs", summary="The jobs (= cronctl list --json)", response_model=None,
            responses=documented(shapes.Jobs))
def get_jobs(request: Request) -> shapes.Jobs:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> shapes.Jobs:
        from cronctl.store.status import statuses_from

        loaded = ctx.valid(now)
        statuses = statuses_from(ctx.store, [job.id for job in loaded.jobs])
        return list_document(list_rows(loaded.config, loaded.jobs, now, statuses))

    return ctx.bounded(work)


@router.get("/jobs/{job_id}", summary="One job (its entry of cronctl list --json)",
            response_model=None, responses=documented(shapes.JobRow, 404))
def get_job(job_id: str, request: Request) -> shapes.JobRow:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> shapes.JobRow:
        from cronctl.store.status import statuses_from

        job = ctx.job(job_id, now)
        loaded = ctx.loaded(now)
        [row] = list_rows(loaded.config, [job], now, statuses_from(ctx.store, [job.id]))
        return row.to_json()

    return ctx.bounded(work)


@router.get("/jobs/{job_id}/next", summary="Next fire times (= cronctl next JOB --json)",
            response_model=None, responses=documented(shapes.Next, 404))
def get_next(job_id: str, request: Request,
             n: Annotated[int | None, INTEGERS["n"].query("How many fires (default 5)")] = None,
             from_: str | None = Query(None, alias="from", description=(
                 "From when (default now): an ISO 8601 time (without an offset, in the job's "
                 "zone), 'now', or a duration from now (2h, +2h; -1d: a day ago)"))
             ) -> shapes.Next:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)
    count = 5 if n is None else n
    target = job_target(ctx.job(job_id, now))
    begin = parse_from(from_, now, target.timezone)
    return to_json(target, begin, next_fires(target, begin, count))


@router.get("/why/{job_id}", summary="What became of an occurrence (= cronctl why --json)",
            response_model=None, responses=documented(shapes.Why, 404))
def get_why(job_id: str, request: Request, at: Annotated[str, Query(description=(
        "The instant asked about (its occurrence, or the one planned nearest before): an "
        "ISO 8601 time (without an offset, in the job's zone), a time of day (09:15, "
        "today), 'now', or a duration meaning that long ago (2h)"))] = "now") -> shapes.Why:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> shapes.Why:
        job = ctx.job(job_id, now)
        verdict, executions = decide(job, at, ctx.store, now, ctx.loaded(now).by_id())
        return why_document(job, verdict, executions)

    return ctx.bounded(work)


# --- executions ----------------------------------------------------------------------------


@router.get("/executions", summary="Executions, newest first (= cronctl history --json), "
            "a page at a time: pass next_cursor back as cursor", response_model=None,
            responses=documented(shapes.ExecutionsPage, 404))
def get_executions(request: Request, job: JobFilter = None,
                   status: Annotated[str | None, Query(description=(
                       "Comma-separated statuses (pending, running, succeeded, failed, "
                       "abandoned, cancelled, dead_letter, lost; skipped: skip records)"))
                   ] = None,
                   since: Since = None, until: Until = None, limit: Limit = None,
                   cursor: Annotated[str | None, Query(description=(
                       "A next_cursor this server gave out"))] = None
                   ) -> shapes.ExecutionsPage:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)
    size = DEFAULT_LIMIT if limit is None else limit
    since_at, until_at = _time(since, now, "--since"), _time(until, now, "--until")
    before = decode_cursor(cursor) if cursor is not None else None

    def work() -> shapes.ExecutionsPage:
        loaded = ctx.loaded(now)
        entries = read_history(ctx.store, loaded.config, job=job, status=status,
                               since=since_at, until=until_at, limit=size, before=before)
        return {"executions": history_document(entries)["executions"],
                "next_cursor": encode_cursor(entries[-1]) if len(entries) == size else None}

    return ctx.bounded(work)


@router.get("/skips", summary="Skip records, newest first "
            "(= cronctl history --status skipped --json)", response_model=None,
            responses=documented(shapes.History, 404))
def get_skips(request: Request, job: JobFilter = None, since: Since = None,
              until: Until = None, limit: Limit = None) -> shapes.History:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)
    size = DEFAULT_LIMIT if limit is None else limit
    since_at, until_at = _time(since, now, "--since"), _time(until, now, "--until")

    def work() -> shapes.History:
        entries = read_history(ctx.store, ctx.loaded(now).config, job=job, status="skipped",
                               since=since_at, until=until_at, limit=size)
        return history_document(entries)

    return ctx.bounded(work)


@router.get("/executions/{execution_id}", summary="One execution (its history entry)",
            response_model=None, responses=documented(shapes.Execution, 404))
def get_execution(execution_id: ExecutionId, request: Request) -> shapes.Execution:
    from cronctl.views.common import execution_json

    principal(request)
    ctx = context(request)
    ident = execution_id
    record = ctx.bounded(lambda: ctx.store.get_execution(ident))
    if record is None:
        raise NotFoundError(f"no execution {ident}")
    return execution_json(record)


@router.get("/executions/{execution_id}/logs",
            summary="Job log lines after after_seq (= cronctl logs ID --json)",
            response_model=None, responses=documented(shapes.Logs, 404))
def get_logs(execution_id: ExecutionId, request: Request,
             after_seq: Annotated[int | None, INTEGERS["after_seq"].query(
                 "Only the lines after this seq (default 0: all)")] = None) -> shapes.Logs:
    principal(request)
    ctx = context(request)
    ident = execution_id
    after = 0 if after_seq is None else after_seq

    def work() -> shapes.Logs:
        record = ctx.store.get_execution(ident)
        if record is None:
            raise NotFoundError(f"no execution {ident}")
        return logs_document(record, ctx.store.read_logs(ident, after_seq=after))

    return ctx.bounded(work)


@router.get("/status", summary="Nodes, running executions, next fires (= cronctl status "
            "--json)", response_model=None, responses=documented(shapes.Status))
def get_status(request: Request) -> shapes.Status:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> shapes.Status:
        loaded = ctx.loaded(now)
        warnings = []
        if loaded.violations:
            warnings.append(f"{len(loaded.violations)} violation(s) in the job definitions")
        return collect(loaded.config, ctx.store, loaded.jobs, now, warnings).to_json()

    return ctx.bounded(work)


# --- actions (operate) ---------------------------------------------------------------------


def trigger_job(request: Request, job_id: str, csrf: str | None = None) -> shapes.Triggered:
    ctx = context(request)
    now = datetime.now(UTC)

    def work(_: Any) -> shapes.Triggered:
        ctx.job(job_id, now)
        doc, _record = actions.trigger_document(ctx.config, ctx.store, job_id, now)
        return doc

    return audited(request, "trigger", job_id, None, work, csrf=csrf)


def cancel_execution(request: Request, execution_id: str, csrf: str | None = None
                     ) -> shapes.Cancelled:
    ctx = context(request)

    def work(_: Any) -> shapes.Cancelled:
        ident = INTEGERS["execution_id"].parse(execution_id)
        record = ctx.store.get_execution(ident)
        if record is None:
            raise NotFoundError(f"no execution {ident}")
        return actions.request_cancel(ctx.store, record)

    return audited(request, "cancel", execution_id, None, work, csrf=csrf)


def pause_job(request: Request, job_id: str, paused: bool, csrf: str | None = None
              ) -> shapes.Paused:
    ctx = context(request)
    now = datetime.now(UTC)

    def work(_: Any) -> shapes.Paused:
        from cronctl.views.common import require_job_defined

        require_job_defined(ctx.loaded(now).config, job_id)
        return actions.set_paused(ctx.store, job_id, paused)

    return audited(request, "pause" if paused else "resume", job_id, None, work, csrf=csrf)


def replay_job(request: Request, job_id: str, body: ReplayBody, csrf: str | None = None
               ) -> shapes.Replay:
    ctx = context(request)
    now = datetime.now(UTC)

    def work(_: Any) -> shapes.Replay:
        start = argtypes.parse_time(body.since, now, what="--since")
        end = argtypes.parse_time(body.until, now, what="--until") if body.until else now
        return actions.replay(ctx.loaded(now).config, ctx.store, job_id, start, end,
                              max_count=body.max, dry_run=body.dry_run, now=now).to_json()

    return audited(request, "replay", job_id, body.model_dump(), work, csrf=csrf)


@router.post("/jobs/{job_id}/trigger", summary="Run one occurrence now (= cronctl trigger "
             "--json); needs a live scheduler", response_model=None,
             responses=documented(shapes.Triggered, 403, 404, 409))
def post_trigger(job_id: str, request: Request) -> shapes.Triggered:
    return trigger_job(request, job_id)


@router.post("/executions/{execution_id}/cancel", summary="Cancel cooperatively "
             "(= cronctl cancel --json)", response_model=None,
             responses=documented(shapes.Cancelled, 403, 404, 409))
def post_cancel(execution_id: ExecutionId, request: Request) -> shapes.Cancelled:
    return cancel_execution(request, str(execution_id))


@router.post("/jobs/{job_id}/pause", summary="Stop firing, cluster-wide (= cronctl pause)",
             response_model=None, responses=documented(shapes.Paused, 403, 404))
def post_pause(job_id: str, request: Request) -> shapes.Paused:
    return pause_job(request, job_id, True)


@router.post("/jobs/{job_id}/resume", summary="Fire again (= cronctl resume)",
             response_model=None, responses=documented(shapes.Paused, 403, 404))
def post_resume(job_id: str, request: Request) -> shapes.Paused:
    return pause_job(request, job_id, False)


@router.post("/jobs/{job_id}/replay", summary="Queue missed occurrences (= cronctl replay "
             "--json)", response_model=None,
             responses=documented(shapes.Replay, 403, 404))
def post_replay(job_id: str, body: ReplayBody, request: Request) -> shapes.Replay:
    return replay_job(request, job_id, body)
