"""Jinja2 rendering of the dashboard's pages: the environment (autoescaped), the filters
that show instants, and the CSRF cookie each page hands its forms."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from cronctl.serve.auth import CSRF_COOKIE, Principal, csrf_key, csrf_valid, new_csrf
from cronctl.serve.board import last_line
from cronctl.serve.strip import strip_html

TEMPLATES = Path(__file__).parent / "templates"
LIVE_HEADER = "X-Cronctl-Live"


def _utc(t: datetime | str | None) -> str:
    if t is None:
        return "–"
    if isinstance(t, str):
        t = datetime.fromisoformat(t.replace("Z", "+00:00"))
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") + "Z"


def _relative(t: datetime | str | None, now: datetime) -> str:
    """``in 3h 2m`` / ``5m ago``, to the two largest units."""
    if t is None:
        return ""
    if isinstance(t, str):
        t = datetime.fromisoformat(t.replace("Z", "+00:00"))
    seconds = round((t - now).total_seconds())
    if abs(seconds) < 2:
        return "just now"  # a heartbeat a few milliseconds "ahead" is not "in 0s"
    future = seconds > 0
    left = abs(seconds)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size or (unit == "s" and not parts):
            parts.append(f"{left // size}{unit}")
            left %= size
        if len(parts) == 2:
            break
    text = " ".join(parts)
    return f"in {text}" if future else f"{text} ago"


def _stamp(t: datetime | str | None) -> datetime | None:
    if t is None or isinstance(t, datetime):
        return t
    return datetime.fromisoformat(t.replace("Z", "+00:00"))


def _duration(start: timedelta | datetime | str | None,
              end: datetime | str | None = None) -> str:
    """How long an attempt took (a ``timedelta``, or its start and end): ``0.4s``,
    ``12s``, ``3m 5s``, ``2h 10m``; empty when unknown (not started, not ended)."""
    if isinstance(start, timedelta):
        took: timedelta | None = start
    else:
        a, b = _stamp(start), _stamp(end)
        took = None if a is None or b is None else b - a
    if took is None:
        return ""
    seconds = max(took.total_seconds(), 0.0)
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60}s"
    return f"{whole // 3600}h {whole % 3600 // 60}m"


def _kinds(concerns: Sequence[Any]) -> list[tuple[str, int]]:
    """How many concerns of each kind, in the order they first come."""
    counts: dict[str, int] = {}
    for concern in concerns:
        counts[concern.kind] = counts.get(concern.kind, 0) + 1
    return list(counts.items())


def _local(text: str) -> str:
    """``2026-03-08T03:00:00-04:00`` as ``2026-03-08 03:00:00 -04:00``."""
    stamp = datetime.fromisoformat(text)
    offset = stamp.strftime("%z")
    return f"{stamp:%Y-%m-%d %H:%M:%S} {offset[:3]}:{offset[3:]}" if offset else f"{stamp:%c}"


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES),
                      autoescape=select_autoescape(["html"]), trim_blocks=True,
                      lstrip_blocks=True)
    env.filters["utc"] = _utc
    env.filters["local"] = _local
    env.globals["relative"] = _relative
    env.globals["strip_html"] = strip_html
    env.globals["duration"] = _duration
    env.globals["kinds"] = _kinds
    env.filters["last_line"] = last_line
    return env


def page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """Render ``template`` with the request's principal, the CSRF token for its forms (the
    cookie is set when missing or not signed for this principal) and ``values``."""
    from cronctl.serve.guard import context

    who: Principal | None = getattr(request.state, "principal", None)
    key = csrf_key(context(request).tokens)
    cookie = request.cookies.get(CSRF_COOKIE)
    name = who.name if who is not None else ""
    token = cookie if cookie and csrf_valid(key, name, cookie, cookie) else new_csrf(key, name)
    # The pages' refresh script asks for the main part only (static/refresh.js): the
    # same template and data, without the header, the footer and the scripts.
    live_only = request.headers.get(LIVE_HEADER) == "1"
    html = environment().get_template(template).render(
        who=who, csrf=token, now=datetime.now(UTC), path=request.url.path,
        notice=None if live_only else request.query_params.get("notice"),
        live_only=live_only, **values)
    response = HTMLResponse(html, status_code=status)
    response.headers["Cache-Control"] = "no-store"
    response.headers["Vary"] = LIVE_HEADER
    if token != cookie:
        response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/")
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def render_error(request: Request, status: int, message: str) -> HTMLResponse:
    from http import HTTPStatus

    return page(request, "error.html", status=status, status_code=status,
                title=HTTPStatus(status).phrase, message=message)
