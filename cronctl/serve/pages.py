"""The dashboard: server-rendered pages that work without JavaScript (the execution
page's live log is the one progressive script), and the forms behind its buttons.

Every page reads what the API reads, with the same :mod:`cronctl.views` functions; every
button is a form ``POST`` that goes through the same action and audit path as the API
(:mod:`cronctl.serve.api`), plus the CSRF check of a cookie session. A browser user logs
in with a token (``/login``, :mod:`cronctl.serve.login`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from cronctl.errors import CronctlError
from cronctl.serve import api
from cronctl.serve.guard import context, principal
from cronctl.serve.render import page
from cronctl.views import actions
from cronctl.views.history import decode_cursor, encode_cursor, read_history

if TYPE_CHECKING:
    from cronctl.views import shapes

router = APIRouter(include_in_schema=False)
HISTORY_PAGE = 25


def _back(path: str, notice: str) -> RedirectResponse:
    sep = "&" if "?" in path else "?"
    return RedirectResponse(f"{path}{sep}notice={quote(notice)}", status_code=303)


# --- pages ---------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def jobs_page(request: Request, q: str = "", state: str = "") -> Response:
    """What needs attention, then the jobs; ``q`` (in the id or the description) and
    ``state`` filter the jobs (a GET form: it works without JavaScript)."""
    from cronctl.serve.board import STATES, build_board

    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)

    def work() -> Any:
        loaded = ctx.loaded(now)
        return build_board(loaded.config, loaded.jobs, ctx.store, now, loaded.violations)

    board = ctx.bounded(lambda: ctx.shared("jobs page", work))
    query = q.strip().lower()
    wanted = state if state in STATES else ""
    lines = [line for line in board.lines if (not query or line.matches(query))
             and (not wanted or line.state == wanted)]
    return page(request, "jobs.html", board=board, lines=lines, q=q.strip(), state=wanted,
                states=STATES)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(job_id: str, request: Request, at: str | None = None,
             cursor: str | None = None) -> Response:
    principal(request)
    ctx = context(request)
    now = datetime.now(UTC)
    before = decode_cursor(cursor) if cursor else None

    def work() -> dict[str, Any]:
        from cronctl.serve.board import build_board
        from cronctl.views.next import job_target, next_fires, to_json
        from cronctl.views.why import decide, why_document

        job = ctx.job(job_id, now)
        config = ctx.loaded(now).config
        board = build_board(config, [job], ctx.store, now)
        [line] = board.lines
        target = job_target(job)
        nexts = to_json(target, now, next_fires(target, now, 10))
        why = why_error = None
        if at:
            try:
                verdict, executions = decide(job, at, ctx.store, now,
                                             ctx.loaded(now).by_id())
                why = why_document(job, verdict, executions)
            except CronctlError as exc:  # a bad AT: said next to the form
                why_error = str(exc)
        history = read_history(ctx.store, config, job=job.id, status=None, since=None,
                               until=None, limit=HISTORY_PAGE, before=before)
        skips = read_history(ctx.store, config, job=job.id, status="skipped", since=None,
                             until=None, limit=HISTORY_PAGE)
        older = encode_cursor(history[-1]) if len(history) == HISTORY_PAGE else None
        return {"job": job, "row": line.row, "line": line, "next": nexts, "why": why,
                "why_error": why_error,
                "at": at or "", "history": [e.doc for e in history], "older": older,
                "skips": [e.doc for e in skips],
                "strip": board.strips.get(job.id),
                "paged": before is not None}

    return page(request, "job.html", **ctx.bounded(work))


@router.get("/executions/{execution_id}", response_class=HTMLResponse)
def execution_page(execution_id: str, request: Request) -> Response:
    principal(request)
    ctx = context(request)
    from cronctl.serve.schemas import INTEGERS

    ident = INTEGERS["execution_id"].parse(execution_id)
    doc = api.get_logs(ident, request)
    return page(request, "execution.html", execution=doc["execution"], lines=doc["lines"],
                last_seq=doc["lines"][-1]["seq"] if doc["lines"] else 0,
                final=doc["execution"]["status"] not in ("pending", "running"),
                attempts=ctx.bounded(lambda: _attempts(ctx, doc["execution"])))


def _attempts(ctx: Any, execution: Mapping[str, Any]) -> list[shapes.Execution]:
    from cronctl.views.common import execution_json

    records = ctx.store.executions_of_occurrence(execution["job"], execution["occurrence_id"])
    return [execution_json(r) for r in records]


@router.get("/status", response_class=HTMLResponse)
def status_page(request: Request) -> Response:
    doc = api.get_status(request)
    violations = context(request).loaded(datetime.now(UTC)).violations
    return page(request, "status.html", state=doc, violations=violations)


# --- buttons -------------------------------------------------------------------------------


@router.post("/jobs/{job_id}/trigger")
def trigger_form(job_id: str, request: Request, csrf: str = Form("")) -> Response:
    doc = api.trigger_job(request, job_id, csrf=csrf)
    return _back(f"/executions/{doc['execution_id']}", f"triggered {job_id}: execution "
                 f"{doc['execution_id']} started")


@router.post("/jobs/{job_id}/pause")
def pause_form(job_id: str, request: Request, csrf: str = Form("")) -> Response:
    doc = api.pause_job(request, job_id, True, csrf=csrf)
    return _back(f"/jobs/{quote(job_id)}", f"paused {job_id}" if doc["changed"] else
                 f"{job_id} was already paused")


@router.post("/jobs/{job_id}/resume")
def resume_form(job_id: str, request: Request, csrf: str = Form("")) -> Response:
    doc = api.pause_job(request, job_id, False, csrf=csrf)
    return _back(f"/jobs/{quote(job_id)}", f"resumed {job_id}" if doc["changed"] else
                 f"{job_id} was not paused")


@router.post("/jobs/{job_id}/replay")
def replay_form(job_id: str, request: Request, csrf: str = Form(""), since: str = Form(""),
                until: str = Form(""), dry_run: str = Form("")) -> Response:
    body = api.ReplayBody(since=since, until=until or None, dry_run=bool(dry_run),
                          max=actions.DEFAULT_MAX)
    doc = api.replay_job(request, job_id, body, csrf=csrf)
    verb = "would queue" if doc["dry_run"] else "queued"
    return _back(f"/jobs/{quote(job_id)}", f"replay {job_id}: {verb} {len(doc['queued'])}, "
                 f"{len(doc['already_handled'])} already handled")


@router.post("/executions/{execution_id}/cancel")
def cancel_form(execution_id: str, request: Request, csrf: str = Form("")) -> Response:
    api.cancel_execution(request, execution_id, csrf=csrf)
    return _back(f"/executions/{execution_id}", f"cancel requested for execution "
                 f"{execution_id}")
