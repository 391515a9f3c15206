"""Errors as RFC 9457 problem documents: the status a user error maps to, and the
document, whose ``detail`` is the CLI's one-line message for the same mistake."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from cronctl.errors import ConfigError, CronctlError, NotFoundError, StoreError, UsageError
from cronctl.serve.auth import Forbidden, Unauthorized
from cronctl.serve.context import Overloaded
from cronctl.serve.tokens import TokensUnavailable
from cronctl.views.actions import AlreadyFinal, NoScheduler

PROBLEM_TYPE = "application/problem+json"

# Most specific first: the first class an error is an instance of decides.
_STATUS: tuple[tuple[type[CronctlError], int], ...] = (
    (NotFoundError, 404),
    (UsageError, 400),
    (Unauthorized, 401),
    (Forbidden, 403),
    (AlreadyFinal, 409),
    (NoScheduler, 409),
    (Overloaded, 503),
    (TokensUnavailable, 503),
    (StoreError, 503),
    (ConfigError, 500),
)


def status_of(exc: CronctlError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 400


def problem(status: int, detail: str, instance: str | None = None) -> dict[str, Any]:
    """``{"type", "title", "status", "detail"[, "instance"]}``; ``type`` is
    ``about:blank``: the status says what kind of problem it is, ``detail`` which."""
    doc: dict[str, Any] = {"type": "about:blank", "title": HTTPStatus(status).phrase,
                           "status": status, "detail": detail}
    if instance is not None:
        doc["instance"] = instance
    return doc
