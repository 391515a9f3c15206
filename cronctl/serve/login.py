"""The dashboard's login and logout: a token exchanged for a browser session (a random
id in an HttpOnly, SameSite=Strict cookie; its digest, token and expiry in the state
database, see :mod:`cronctl.serve.auth`), and logout deleting it. Both routes are open
(:mod:`cronctl.serve.gate`); a failed login counts against the client's limit like any
other failed authentication."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from cronctl.serve.auth import (
    SESSION_COOKIE,
    Unauthorized,
    bearer,
    new_session_id,
    session_digest,
)
from cronctl.serve.guard import client_of, context
from cronctl.serve.limits import source_of
from cronctl.serve.render import page

router = APIRouter(include_in_schema=False)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> Response:
    return page(request, "login.html", next=safe_next(next), error=None)


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, token: str = Form(""), next: str = Form("/")) -> Response:
    ctx = context(request)
    client = client_of(request)
    try:
        who = bearer(ctx.tokens, f"Bearer {token}")
    except Unauthorized as exc:
        ctx.failures.failed(source_of(client))
        ctx.refusals.note(client, "POST /login", 401)
        return page(request, "login.html", status=401, next=safe_next(next),
                    error=str(exc))
    [entry] = [t for t in ctx.tokens if t.name == who.name]
    session = new_session_id()
    now = datetime.now(UTC)
    ctx.store.open_api_session(id_digest=session_digest(session), token_name=who.name,
                               token_digest=entry.digest, created_at=now,
                               expires_at=now + ctx.session_lifetime, client=client)
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict", path="/",
                        max_age=int(ctx.session_lifetime.total_seconds()))
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    """End the session server-side (every replica sees it gone), then drop the cookie."""
    session = request.cookies.get(SESSION_COOKIE)
    if session:
        context(request).store.end_api_session(session_digest(session))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def safe_next(target: str) -> str:
    """Only a path on this server (no ``//host``, no scheme): no open redirect."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
