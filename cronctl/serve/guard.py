"""Each request's principal (found by :mod:`cronctl.serve.gate` before the application
ran), and each ``POST``: authorised, CSRF-checked when it comes from a browser session,
carried out, and written to the audit log (who, what, when, the result) whatever came of
it. Requests refused before authentication are tallied by the gate instead: an
unauthenticated client cannot add a row per request."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from fastapi import Request

from cronctl.errors import CronctlError
from cronctl.serve.auth import (
    CSRF_COOKIE,
    Forbidden,
    Principal,
    Unauthorized,
    csrf_key,
    csrf_valid,
    require_operate,
)
from cronctl.serve.context import ServeContext
from cronctl.serve.problems import status_of

T = TypeVar("T")
log = logging.getLogger("cronctl.serve")


def context(request: Request) -> ServeContext:
    ctx: ServeContext = request.app.state.ctx
    return ctx


def client_of(request: Request) -> str | None:
    return request.client.host if request.client is not None else None


def principal(request: Request) -> Principal:
    """Who is asking, as the gate found; :class:`Unauthorized` on a route the gate left
    open (none of those may call this)."""
    found = getattr(request.state, "principal", None)
    if not isinstance(found, Principal):
        raise Unauthorized("a token is needed: 'Authorization: Bearer <token>', or log in at "
                           "/login")
    return found


def audited(request: Request, action: str, target: str | None, detail: dict[str, Any] | None,
            work: Callable[[Principal], T], *, csrf: str | None = None) -> T:
    """Authorise a ``POST`` (operate role; CSRF for cookie sessions), run ``work`` and
    write its audit row. The row names the token, never holds it."""
    ctx = context(request)
    who: Principal | None = None
    status, result = 200, "ok"
    try:
        who = principal(request)
        require_operate(who)
        if who.via_cookie:
            sent = csrf if csrf is not None else request.headers.get("x-csrf-token")
            if not csrf_valid(csrf_key(ctx.tokens), who.name, request.cookies.get(CSRF_COOKIE),
                              sent):
                raise Forbidden("the form's CSRF token is missing or stale; reload the page "
                                "and try again")
        result_value = work(who)
        ctx.forget()
        return result_value
    except CronctlError as exc:
        status, result = status_of(exc), str(exc)
        raise
    except Exception as exc:  # a bug: the row still says something went wrong
        status, result = 500, f"internal error ({exc.__class__.__name__})"
        raise
    finally:
        _record(ctx, request, who, action, target, detail, status, result)


def refused(request: Request, status: int, result: str) -> None:
    """The audit row of an authenticated ``POST`` refused before it ran (its parameters
    or body are not valid): the action is the path's last part, the target its id."""
    who = getattr(request.state, "principal", None)
    if not isinstance(who, Principal):
        return
    params = request.path_params
    target = params.get("job_id", params.get("execution_id"))
    _record(context(request), request, who, request.url.path.rstrip("/").rsplit("/", 1)[-1],
            None if target is None else str(target), None, status, result)


def _record(ctx: ServeContext, request: Request, who: Principal | None, action: str,
            target: str | None, detail: dict[str, Any] | None, status: int,
            result: str) -> None:
    actor = who.name if who is not None else "-"
    try:
        ctx.store.record_audit(
            at=datetime.now(UTC), actor=actor, role=None if who is None else who.role,
            action=action, target=target,
            detail=None if not detail else json.dumps(detail, sort_keys=True),
            status=status, result=result, client=client_of(request))
    except Exception as exc:  # the action is done; say that its record is missing
        log.error("audit row not written (action %s on %s by %s): %s", action, target, actor,
                  exc)
