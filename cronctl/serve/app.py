"""The FastAPI application of ``cronctl serve``: the API router, the dashboard's pages,
the static files, and one error handler that turns every user error into an RFC 9457
problem (``/api``) or an error page (the dashboard), never a traceback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from cronctl.errors import CronctlError
from cronctl.serve.auth import Unauthorized
from cronctl.serve.context import ServeContext
from cronctl.serve.problems import PROBLEM_TYPE, problem, status_of

HERE = Path(__file__).parent
log = logging.getLogger("cronctl.serve")


def build_app(ctx: ServeContext, version: str = "0") -> FastAPI:
    from cronctl.serve import api, login, pages
    from cronctl.serve.gate import Gate

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        # uvicorn re-raises SIGTERM once it has shut down, so the process may end before
        # the caller's ``finally``: what must outlive the last request is written here.
        ctx.finish()

    app = FastAPI(
        title="cronctl", version=version, lifespan=lifespan,
        description="The state of a cronctl installation, with the same documents as the "
                    "CLI's --json. Auth: 'Authorization: Bearer <token>' ([api] tokens_file); "
                    "request bodies are at most 1 MiB.",
        openapi_url="/api/v1/openapi.json", docs_url=None, redoc_url=None,
    )
    app.state.ctx = ctx
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(login.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.exception_handler(CronctlError)
    def user_error(request: Request, exc: CronctlError) -> Response:
        return error_response(request, status_of(exc), str(exc), exc)

    @app.exception_handler(RequestValidationError)
    def bad_request(request: Request, exc: RequestValidationError) -> Response:
        message = _validation_message(exc)
        if request.method == "POST" and is_api(request):
            from cronctl.serve.guard import refused

            refused(request, 400, message)  # an authenticated POST: its audit row
        return error_response(request, 400, message, None)

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # what FastAPI itself raises (a body that is not JSON: 400), as a problem
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        if exc.status_code == 400 and request.method == "POST" and is_api(request):
            from cronctl.serve.guard import refused

            refused(request, 400, detail)
        return error_response(request, exc.status_code, detail, None)

    @app.exception_handler(404)
    def not_found(request: Request, exc: Any) -> Response:
        detail = getattr(exc, "detail", None)
        message = detail if isinstance(detail, str) and detail != "Not Found" else (
            f"no such page: {request.url.path}")
        return error_response(request, 404, message, None)

    @app.exception_handler(405)
    def bad_method(request: Request, exc: Any) -> Response:
        answer = error_response(request, 405, f"{request.method} is not allowed on "
                                f"{request.url.path}", None)
        answer.headers["Allow"] = ", ".join(_allowed(app, request))  # RFC 9110 15.5.6
        return answer

    # Outermost of the application's own layers: nothing below it has read the request.
    app.add_middleware(Gate, ctx=ctx)
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated document, with the bearer scheme every operation requires (the gate
    checks it, so no route declares it)."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        from cronctl.serve.schemas import finish

        doc = get_openapi(title=app.title, version=app.version,
                          description=app.description, routes=app.routes)
        doc.setdefault("components", {})["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer",
                       "description": "A token of [api] tokens_file"}}
        doc["security"] = [{"bearer": []}]
        app.openapi_schema = finish(doc)
    return app.openapi_schema


def _allowed(app: FastAPI, request: Request) -> list[str]:
    """The methods some route takes on the request's path."""
    from starlette.routing import Match

    return [method for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
            if any(route.matches({**request.scope, "method": method})[0] is Match.FULL
                   for route in app.router.routes)]


def _validation_message(exc: RequestValidationError) -> str:
    """The CLI's message for a bad integer; pydantic's, a line per field, for the rest."""
    from cronctl.serve.schemas import cli_message

    parts = []
    for error in exc.errors()[:3]:
        cli = cli_message(error)
        if cli is not None:
            parts.append(cli)
            continue
        where = ".".join(str(x) for x in error.get("loc", ()) if x not in ("body", "query"))
        parts.append(f"{where}: {error.get('msg', 'invalid')}" if where else
                     str(error.get("msg", "invalid")))
    return "; ".join(parts) or "the request is not valid"


def is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def error_response(request: Request, status: int, message: str,
                   exc: CronctlError | None) -> Response:
    """A problem document for the API; for a page, the login form (401) or an error page."""
    if is_api(request):
        headers = {"WWW-Authenticate": 'Bearer realm="cronctl"'} if status == 401 else None
        return JSONResponse(problem(status, message, request.url.path), status_code=status,
                            media_type=PROBLEM_TYPE, headers=headers)
    if isinstance(exc, Unauthorized) and request.method == "GET":
        from urllib.parse import quote

        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
    from cronctl.serve.render import render_error

    return render_error(request, status, message)
