"""``/api/v1``: JSON with exactly the CLI's ``--json`` shapes (every document comes from
:mod:`cronctl.views`), RFC 9457 problems for errors (:mod:`cronctl.serve.problems`).

Query values are taken as text and read by the CLI's own parsers
(:mod:`cronctl.argtypes`), so ``?since=2h`` means what ``--since 2h`` means and a bad
value gets the CLI's message. Reads run under the deadline of
:meth:`ServeContext.bounded`; ``POST`` endpoints go through :func:`guard.audited`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from cronctl import argtypes
from cronctl.errors import NotFoundError
from cronctl.serve.guard import audited, context, principal
from cronctl.views import actions
from cronctl.views.history import decode_cursor, encode_cursor, history_document, read_history
from cronctl.views.jobs import list_document, list_rows
from cronctl.views.logs import logs_document
from cronctl.views.next import MAX_COUNT, job_target, next_fires, parse_from, to_json
from cronctl.views.status import collect
from cronctl.views.why import decide, why_document


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/problem+json": {}}}


# What the gate (cronctl/serve/gate.py) may answer any operation before it runs.
GATE_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _problem("Bad input, or a missing Host header"),
    401: _problem("No token, an unknown one, or an ended session"),
    413: _problem("The request body is over 1 MiB"),
    421: _problem("The Host header names a host this server does not answer "
                  "([api] allowed_hosts)"),
    429: _problem("Too many failed authentications from this address; see Retry-After"),
    503: _problem("The tokens file or the database cannot be used, or [api] query_timeout "
                  "passed"),
}
router = APIRouter(prefix="/api/v1", responses=GATE_RESPONSES)
DEFAULT_LIMIT = 20  # = cronctl history --limit
MAX_PAGE = 1000


class ReplayBody(BaseModel):
    since: str = Field(description="Window start (exclusive): ISO 8601 or relative (2h, 3d).")
    until: str | None = Field(None, description="Window end (inclusive), default now.")
    dry_run: bool = Field(False, description="Show what would be queued; write nothing.")
    max: int = Field(actions.DEFAULT_MAX, ge=1, le=100_000,
                     description="Queue at most this many occurrences (the oldest).")


def _time(text: str | None, now: datetime, what: str) -> datetime | None:
    return None if text is None else argtypes.parse_time(text, now, what=what)


def _execution_id(text: str) -> int:
    return argtypes.parse_int(text, what="EXECUTION_ID", minimum=1, maximum=argtypes.BIGINT_MAX)


# --- jobs ----------------------------------------------------------------------------------


@router.get("/jobs", summary="The jobs (= cronctl list --json)")
def get_jobs(request: Request) -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> dict[str, Any]:
        from cronctl.store.status import statuses_from

        loaded = ctx.valid(now)
        statuses = statuses_from(ctx.store, [job.id for job in loaded.jobs])
        return list_document(list_rows(loaded.config, loaded.jobs, now, statuses))

    return ctx.bounded(work)


@router.get("/jobs/{job_id}", summary="One job (its entry of cronctl list --json)")
def get_job(job_id: str, request: Request) -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> dict[str, Any]:
        from cronctl.store.status import statuses_from

        job = ctx.job(job_id, now)
        loaded = ctx.loaded(now)
        [row] = list_rows(loaded.config, [job], now, statuses_from(ctx.store, [job.id]))
        return row.to_json()

    return ctx.bounded(work)


@router.get("/jobs/{job_id}/next", summary="Next fire times (= cronctl next JOB --json)")
def get_next(job_id: str, request: Request, n: str | None = None,
             from_: str | None = Query(None, alias="from")) -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)
    count = 5 if n is None else argtypes.parse_int(n, what="--count", minimum=1,
                                                   maximum=MAX_COUNT)
    target = job_target(ctx.job(job_id, now))
    begin = parse_from(from_, now, target.timezone)
    return to_json(target, begin, next_fires(target, begin, count))


@router.get("/why/{job_id}", summary="What became of an occurrence (= cronctl why --json)")
def get_why(job_id: str, request: Request, at: str = "now") -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> dict[str, Any]:
        job = ctx.job(job_id, now)
        verdict, executions = decide(job, at, ctx.store, now, ctx.loaded(now).by_id())
        return why_document(job, verdict, executions)

    return ctx.bounded(work)


# --- executions ----------------------------------------------------------------------------


@router.get("/executions", summary="Executions, newest first (= cronctl history --json), "
            "a page at a time: pass next_cursor back as cursor")
def get_executions(request: Request, job: str | None = None, status: str | None = None,
                   since: str | None = None, until: str | None = None,
                   limit: str | None = None, cursor: str | None = None) -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)
    size = DEFAULT_LIMIT if limit is None else argtypes.parse_int(
        limit, what="--limit", minimum=1, maximum=MAX_PAGE)
    since_at, until_at = _time(since, now, "--since"), _time(until, now, "--until")
    before = decode_cursor(cursor) if cursor is not None else None

    def work() -> dict[str, Any]:
        loaded = ctx.loaded(now)
        entries = read_history(ctx.store, loaded.config, job=job, status=status,
                               since=since_at, until=until_at, limit=size, before=before)
        doc = history_document(entries)
        doc["next_cursor"] = encode_cursor(entries[-1]) if len(entries) == size else None
        return doc

    return ctx.bounded(work)


@router.get("/skips", summary="Skip records, newest first "
            "(= cronctl history --status skipped --json)")
def get_skips(request: Request, job: str | None = None, since: str | None = None,
              until: str | None = None, limit: str | None = None) -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)
    size = DEFAULT_LIMIT if limit is None else argtypes.parse_int(
        limit, what="--limit", minimum=1, maximum=MAX_PAGE)
    since_at, until_at = _time(since, now, "--since"), _time(until, now, "--until")

    def work() -> dict[str, Any]:
        entries = read_history(ctx.store, ctx.loaded(now).config, job=job, status="skipped",
                               since=since_at, until=until_at, limit=size)
        return history_document(entries)

    return ctx.bounded(work)


@router.get("/executions/{execution_id}", summary="One execution (its history entry)")
def get_execution(execution_id: str, request: Request) -> dict[str, Any]:
    from cronctl.views.common import execution_json

    principal(request)
    ctx = context(request)
    ident = _execution_id(execution_id)
    record = ctx.bounded(lambda: ctx.store.get_execution(ident))
    if record is None:
        raise NotFoundError(f"no execution {ident}")
    return execution_json(record)


@router.get("/executions/{execution_id}/logs",
            summary="Job log lines after after_seq (= cronctl logs ID --json)")
def get_logs(execution_id: str, request: Request, after_seq: str | None = None
             ) -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    ident = _execution_id(execution_id)
    after = 0 if after_seq is None else argtypes.parse_int(
        after_seq, what="after_seq", minimum=0, maximum=argtypes.BIGINT_MAX)

    def work() -> dict[str, Any]:
        record = ctx.store.get_execution(ident)
        if record is None:
            raise NotFoundError(f"no execution {ident}")
        return logs_document(record, ctx.store.read_logs(ident, after_seq=after))

    return ctx.bounded(work)


@router.get("/status", summary="Nodes, running executions, next fires (= cronctl status "
            "--json)")
def get_status(request: Request) -> dict[str, Any]:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> dict[str, Any]:
        loaded = ctx.loaded(now)
        warnings = []
        if loaded.violations:
            warnings.append(f"{len(loaded.violations)} violation(s) in the job definitions")
        return collect(loaded.config, ctx.store, loaded.jobs, now, warnings).to_json()

    return ctx.bounded(work)


# --- actions (operate) ---------------------------------------------------------------------


def trigger_job(request: Request, job_id: str, csrf: str | None = None) -> dict[str, Any]:
    ctx = context(request)
    now = datetime.now(UTC)

    def work(_: Any) -> dict[str, Any]:
        ctx.job(job_id, now)
        doc, _record = actions.trigger_document(ctx.config, ctx.store, job_id, now)
        return doc

    return audited(request, "trigger", job_id, None, work, csrf=csrf)


def cancel_execution(request: Request, execution_id: str, csrf: str | None = None
                     ) -> dict[str, Any]:
    ctx = context(request)

    def work(_: Any) -> dict[str, Any]:
        ident = _execution_id(execution_id)
        record = ctx.store.get_execution(ident)
        if record is None:
            raise NotFoundError(f"no execution {ident}")
        return actions.request_cancel(ctx.store, record)

    return audited(request, "cancel", execution_id, None, work, csrf=csrf)


def pause_job(request: Request, job_id: str, paused: bool, csrf: str | None = None
              ) -> dict[str, Any]:
    ctx = context(request)
    now = datetime.now(UTC)

    def work(_: Any) -> dict[str, Any]:
        from cronctl.views.common import require_job_defined

        require_job_defined(ctx.loaded(now).config, job_id)
        return actions.set_paused(ctx.store, job_id, paused)

    return audited(request, "pause" if paused else "resume", job_id, None, work, csrf=csrf)


def replay_job(request: Request, job_id: str, body: ReplayBody, csrf: str | None = None
               ) -> dict[str, Any]:
    ctx = context(request)
    now = datetime.now(UTC)

    def work(_: Any) -> dict[str, Any]:
        start = argtypes.parse_time(body.since, now, what="--since")
        end = argtypes.parse_time(body.until, now, what="--until") if body.until else now
        return actions.replay(ctx.loaded(now).config, ctx.store, job_id, start, end,
                              max_count=body.max, dry_run=body.dry_run, now=now).to_json()

    return audited(request, "replay", job_id, body.model_dump(), work, csrf=csrf)


@router.post("/jobs/{job_id}/trigger", summary="Run one occurrence now (= cronctl trigger "
             "--json); needs a live scheduler")
def post_trigger(job_id: str, request: Request) -> dict[str, Any]:
    return trigger_job(request, job_id)


@router.post("/executions/{execution_id}/cancel", summary="Cancel cooperatively "
             "(= cronctl cancel --json)")
def post_cancel(execution_id: str, request: Request) -> dict[str, Any]:
    return cancel_execution(request, execution_id)


@router.post("/jobs/{job_id}/pause", summary="Stop firing, cluster-wide (= cronctl pause)")
def post_pause(job_id: str, request: Request) -> dict[str, Any]:
    return pause_job(request, job_id, True)


@router.post("/jobs/{job_id}/resume", summary="Fire again (= cronctl resume)")
def post_resume(job_id: str, request: Request) -> dict[str, Any]:
    return pause_job(request, job_id, False)


@router.post("/jobs/{job_id}/replay", summary="Queue missed occurrences (= cronctl replay "
             "--json)")
def post_replay(job_id: str, body: ReplayBody, request: Request) -> dict[str, Any]:
    return replay_job(request, job_id, body)
