"""What the OpenAPI document says beyond what FastAPI generates from the routes: the
problem document every error is, the statuses each operation can answer, the integer
parameters with their bounds (and the CLI's message when a value is outside them), and
closed response objects.

The response schemas come from :mod:`cronctl.views.shapes`, the classes the CLI's
``--json`` serializers are typed with: one definition per document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Query
from pydantic import BaseModel, Field

from cronctl import argtypes
from cronctl.errors import UsageError
from cronctl.serve.problems import PROBLEM_TYPE


class Problem(BaseModel):
    """An RFC 9457 problem document: ``detail`` is the CLI's one-line message."""

    type: str = Field(description="Always about:blank: the status says what kind it is")
    title: str = Field(description="The status's phrase")
    status: int = Field(description="The HTTP status")
    detail: str = Field(description="What went wrong, as the CLI says it")
    instance: str | None = Field(None, description="The request's path")


_WHY: dict[int, str] = {
    400: "A parameter or the body is not valid (detail: the CLI's message), or the "
         "request's Host or Content-Length header is missing or malformed",
    401: "No token, an unknown one, or an ended session",
    403: "The token's role is read, not operate; or the request's Origin is not this "
         "server's",
    404: "No such job or execution",
    409: "It cannot be done in the state it is in (the detail says why)",
    413: "The request body is over 1 MiB",
    421: "The Host header names a host this server does not answer ([api] allowed_hosts)",
    429: "Too many failed authentications from this address; see Retry-After",
    500: "The configuration or a job definition is not valid (see cronctl validate)",
    503: "The tokens file or the database cannot be used, or [api] query_timeout passed",
}
# What the gate (cronctl/serve/gate.py) may answer any operation before it runs, and
# what every operation may answer once it runs.
EVERY = (400, 401, 413, 421, 429, 500, 503)


def documented(ok: Any, *statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route: 200 with the document ``ok`` (a shape of
    :mod:`cronctl.views.shapes`), and a problem for each status it may answer besides
    :data:`EVERY`."""
    answers: dict[int | str, dict[str, Any]] = {
        200: {"model": ok, "description": "The document (as the CLI's --json prints it)"}}
    for status in sorted({*EVERY, *statuses}):
        answers[status] = {"model": Problem, "description": _WHY[status]}
    return answers


@dataclass(frozen=True)
class IntParam:
    """An integer parameter: the name the CLI gives it (its messages name it so) and its
    bounds."""

    what: str
    minimum: int
    maximum: int

    def query(self, description: str) -> Any:
        return Query(ge=self.minimum, le=self.maximum, description=description)

    def parse(self, text: str) -> int:
        """``text`` as the CLI reads it: :class:`UsageError` with its message."""
        return argtypes.parse_int(text, what=self.what, minimum=self.minimum,
                                  maximum=self.maximum)

    def message(self, value: object) -> str | None:
        """The CLI's message for ``value``, or ``None`` when the CLI would take it."""
        try:
            self.parse(str(value))
        except UsageError as exc:
            return str(exc)
        return None


MAX_PAGE = 1000
# Request bodies stay as pydantic reads them (a key it does not know is ignored).
REQUEST_BODIES = {"ReplayBody"}
INTEGERS: dict[str, IntParam] = {
    "execution_id": IntParam("EXECUTION_ID", 1, argtypes.BIGINT_MAX),
    "limit": IntParam("--limit", 1, MAX_PAGE),
    "n": IntParam("--count", 1, 1000),  # = cronctl.views.next.MAX_COUNT
    "after_seq": IntParam("after_seq", 0, argtypes.BIGINT_MAX),
}


def cli_message(error: dict[str, Any]) -> str | None:
    """For a validation error of an integer parameter, the CLI's message for its value."""
    loc = error.get("loc", ())
    if len(loc) == 2 and loc[0] in ("path", "query") and loc[1] in INTEGERS:
        return INTEGERS[loc[1]].message(error.get("input", ""))
    return None


def finish(doc: dict[str, Any]) -> dict[str, Any]:
    """Errors are ``application/problem+json`` problems (FastAPI's 422 never happens:
    validation errors are 400 problems); response objects are closed (every key is
    listed: a client generated from the document sees all of them, and a check can
    tell an extra one)."""
    for item in doc.get("paths", {}).values():
        for operation in item.values():
            responses = operation.get("responses", {})
            responses.pop("422", None)
            for status, answer in responses.items():
                if int(status) >= 400:
                    answer["content"] = {PROBLEM_TYPE: {
                        "schema": {"$ref": "#/components/schemas/Problem"}}}
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for name, schema in schemas.items():
        if name not in REQUEST_BODIES and schema.get("type") == "object" and (
                "properties" in schema):
            schema.setdefault("additionalProperties", False)
    return doc
