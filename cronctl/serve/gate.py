"""The gate every request of ``cronctl serve`` passes before the application sees it (a
pure ASGI middleware, so nothing has read the body yet):

1. the Host header must be one the server answers (:mod:`cronctl.serve.hosts`), else 421;
   a state-changing request's ``Origin``, when sent, too, else 403;
2. a client that presents credentials must not be over its limit of failed
   authentications (:mod:`cronctl.serve.limits`), else 429 with ``Retry-After``;
3. the request must carry a valid token or browser session (:mod:`cronctl.serve.auth`),
   else 401 (a page ``GET`` is sent to the login form) — only the login form, logout and
   the static files are open;
4. its body may be at most :data:`API_BODY_LIMIT`: a larger ``Content-Length`` is 413 at
   once, and a body without one is counted as it arrives and refused at the first byte
   over. The body is read here, at most the limit, and handed on.

So an unauthenticated client costs a header parse: a refused request's body is never
read (the answer says ``Connection: close``), its refusal is tallied for the audit log
rather than written as a row of its own, and validation errors (400) and the OpenAPI
document are for authenticated clients only.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cronctl.errors import CronctlError
from cronctl.escaping import printable
from cronctl.serve.auth import (
    SESSION_COOKIE,
    Principal,
    Unauthorized,
    bearer,
    session_digest,
    session_principal,
)
from cronctl.serve.context import ServeContext
from cronctl.serve.limits import source_of
from cronctl.serve.problems import PROBLEM_TYPE, problem, status_of
from cronctl.serve.tokens import TokensUnavailable

API_BODY_LIMIT = 1024 * 1024  # every request body of the API and the dashboard's forms
LOGIN_BODY_LIMIT = 16 * 1024  # the login form: a token and a path, read before any auth
# Check-ins (section 12 of docs) keep the first 100 KiB of what a job sends and say so:
# their body is cut, not refused.
CHECKIN_BODY_LIMIT = 100 * 1024
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
OPEN_PATHS = ("/login", "/logout")


class TooLarge(Exception):
    pass


class Gate:
    def __init__(self, app: ASGIApp, ctx: ServeContext) -> None:
        self.app, self.ctx = app, ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answer = await self._check(scope)
        if answer is not None:
            await answer(scope, receive, send)
            return
        headers = Headers(scope=scope)
        limit = LOGIN_BODY_LIMIT if scope["path"] == "/login" else API_BODY_LIMIT
        refused = _length_refused(headers, limit)
        if refused is not None:
            await refused(scope, receive, send)
            return
        if _has_body(headers):
            try:
                body = await _read_body(receive, limit)
            except TooLarge:
                await _problem(scope, 413, _too_large(limit), close=True)(scope, receive, send)
                return
            if body is None:
                return  # the client went away
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _check(self, scope: Scope) -> Response | None:
        """The refusal of the request, or ``None`` (it may go on; its principal is in
        ``scope["state"]``)."""
        ctx = self.ctx
        headers = Headers(scope=scope)
        method, path = scope["method"], scope["path"]
        host = headers.get("host")
        if not ctx.hosts.allows(host):
            shown = printable(host[:100]) if host is not None else None
            return _problem(scope, 421 if host else 400,
                            f"this server does not answer for Host {shown!r}; add the name "
                            "to [api] allowed_hosts" if host else "the Host header is missing",
                            close=_has_body(headers))
        origin = headers.get("origin")
        if method not in SAFE_METHODS and origin is not None and not ctx.hosts.allows_origin(
                origin):
            return _problem(scope, 403, "the request's Origin is not this server's",
                            close=_has_body(headers))
        if path.startswith("/static/"):
            return None
        if path in OPEN_PATHS:
            try:
                ctx.token_source.current()  # the login page's CSRF key is made from them
            except TokensUnavailable as exc:
                return _problem(scope, 503, str(exc), close=_has_body(headers))
            if path == "/login" and method == "POST":
                return self._limited(scope, headers)
            return None
        # A request without credentials guesses nothing: its 401 tells nothing and costs a
        # header parse, so the limit (which keeps guesses from being looked at) is for
        # requests that present a token or a session.
        if _presents(headers):
            limited = self._limited(scope, headers)
            if limited is not None:
                return limited
        try:
            principal = await self._principal(headers)
        except TokensUnavailable as exc:
            return _problem(scope, 503, str(exc), close=_has_body(headers))
        except Unauthorized as exc:
            return self._unauthorized(scope, headers, str(exc))
        except CronctlError as exc:  # the session's store is unreachable: 503, one line
            return _problem(scope, status_of(exc), str(exc), close=_has_body(headers))
        scope.setdefault("state", {})["principal"] = principal
        return None

    async def _principal(self, headers: Headers) -> Principal:
        tokens = self.ctx.tokens
        authorization = headers.get("authorization")
        if authorization is not None:
            return bearer(tokens, authorization)
        session = _cookie(headers, SESSION_COOKIE)
        if not session:
            raise Unauthorized("a token is needed: 'Authorization: Bearer <token>', or log "
                               "in at /login")
        digest = session_digest(session)
        record = await run_in_threadpool(self.ctx.store.find_api_session, digest,
                                         datetime.now(UTC))
        return session_principal(tokens, digest, None if record is None else record.token_name,
                                 None if record is None else record.token_digest)

    def _limited(self, scope: Scope, headers: Headers) -> Response | None:
        client = _client(scope)
        wait = self.ctx.failures.retry_after(source_of(client))
        if not wait:
            return None
        self.ctx.refusals.note(client, _request_line(scope), 429)
        response = _problem(scope, 429, f"too many failed authentications from {client}; "
                            f"try again in {wait}s", close=_has_body(headers))
        response.headers["Retry-After"] = str(wait)
        return response

    def _unauthorized(self, scope: Scope, headers: Headers, message: str) -> Response:
        client = _client(scope)
        if _presents(headers):  # a guess, or a stale session: both count
            self.ctx.failures.failed(source_of(client))
        path = scope["path"]
        if not path.startswith("/api/") and scope["method"] in ("GET", "HEAD"):
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            answer: Response = RedirectResponse(f"/login?next={quote(target, safe='')}",
                                                status_code=303)
        else:
            self.ctx.refusals.note(client, _request_line(scope), 401)
            if path.startswith("/api/"):
                answer = _problem(scope, 401, message, close=_has_body(headers))
                answer.headers["WWW-Authenticate"] = 'Bearer realm="cronctl"'
            else:
                from cronctl.serve.render import render_error

                answer = render_error(Request(scope), 401, message)
                if _has_body(headers):
                    answer.headers["Connection"] = "close"
        if _cookie(headers, SESSION_COOKIE):
            answer.delete_cookie(SESSION_COOKIE, path="/")
        return answer


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def _request_line(scope: Scope) -> str:
    return f"{scope['method']} {printable(scope['path'][:200])}"


def _presents(headers: Headers) -> bool:
    """Whether the request carries credentials: a token or a session cookie."""
    return "authorization" in headers or bool(_cookie(headers, SESSION_COOKIE))


def _cookie(headers: Headers, name: str) -> str | None:
    from http.cookies import SimpleCookie

    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed Cookie header is no session
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() != "0")


def _too_large(limit: int) -> str:
    size = f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit >> 10} KiB"
    return f"the request body is larger than {size}"


def _length_refused(headers: Headers, limit: int) -> Response | None:
    length = headers.get("content-length")
    if length is None:
        return None
    if not (length.strip().isascii() and length.strip().isdigit()):
        return JSONResponse(problem(400, "Content-Length is not a number"), status_code=400,
                            media_type=PROBLEM_TYPE, headers={"Connection": "close"})
    if int(length) > limit:
        return JSONResponse(problem(413, _too_large(limit)), status_code=413,
                            media_type=PROBLEM_TYPE, headers={"Connection": "close"})
    return None


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, counted as it arrives; :class:`TooLarge` at the first byte over
    ``limit``; ``None`` when the client disconnected."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then what the server says (a disconnect)

    return replay


def _problem(scope: Scope, status: int, detail: str, *, close: bool = False) -> Response:
    headers: dict[str, Any] = {"Connection": "close"} if close else {}
    return JSONResponse(problem(status, detail, scope["path"]), status_code=status,
                        media_type=PROBLEM_TYPE, headers=headers)
