"""Jinja2 rendering of the dashboard's pages: the environment (autoescaped), the filters
that show instants, and the CSRF cookie each page hands its forms."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from cronctl.serve.auth import CSRF_COOKIE, Principal, csrf_key, csrf_valid, new_csrf
from cronctl.serve.strip import strip_html

TEMPLATES = Path(__file__).parent / "templates"


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
    html = environment().get_template(template).render(
        who=who, csrf=token, now=datetime.now(UTC), path=request.url.path,
        notice=request.query_params.get("notice"), **values)
    response = HTMLResponse(html, status_code=status)
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
