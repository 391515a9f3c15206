"""The OpenAPI document is the API's contract, checked against a real ``cronctl serve``
beside a real ``cronctl run`` on a seeded SQLite project:

- its response schemas and the CLI's ``--json`` agree field for field on real data: each
  command's document, printed by a real ``cronctl``, is valid against the schema the
  server publishes for the same document, and the schemas are closed (every key
  required, none extra). Both come from one definition per shape
  (cronctl/views/shapes.py);
- schemathesis (a tool nobody here wrote) finds no failure: reads with a read token
  (GET only), then every method with an operate token; a fixed seed, few examples (the
  long run is tests/chaos/test_chaos_schemathesis.py). A failure's output shows the
  command that reproduces it."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_support import (
    OPERATE_TOKEN,
    READ_TOKEN,
    Project,
    Server,
    make_project,
    quick_jobs,
    schemathesis,
    seed,
    start_scheduler,
    start_server,
)

pytestmark = pytest.mark.slow
SEED = 27


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    project = make_project(tmp_path_factory.mktemp("contract"))
    quick_jobs(project)
    seed(project)
    scheduler = start_scheduler(project)
    yield project
    scheduler.terminate()
    scheduler.wait(timeout=20)


@pytest.fixture(scope="module")
def server(project: Project) -> Iterator[Server]:
    server = start_server(project)
    yield server
    server.stop()


def failures(done: subprocess.CompletedProcess[str]) -> str:
    """The run's summary line (``N failures`` / ``N passed``) and the output, for the
    assertion message."""
    last = [line for line in done.stdout.splitlines() if re.match(r"=+ .* in [0-9.]+s =+$",
                                                                   line)]
    return f"{last[-1] if last else '(no summary)'}\n{done.stdout[-20000:]}\n{done.stderr}"


@pytest.mark.parametrize(("token", "get_only"), [(READ_TOKEN, True), (OPERATE_TOKEN, False)],
                         ids=["read-GET", "operate-all"])
def test_schemathesis_finds_no_failure(server: Server, tmp_path: Path, token: str,
                                       get_only: bool) -> None:
    done = schemathesis(server, token, tmp_path, seed=SEED, max_examples=3,
                        get_only=get_only, timeout=120)
    assert done.returncode == 0, failures(done)
    assert "failure" not in done.stdout.splitlines()[-1], failures(done)


def _published(server: Server) -> Any:
    """The OpenAPI document, once the rate limit allows: the schemathesis runs on this
    server send wrong tokens on purpose, and the limit refuses even a right one from that
    source until it has refilled (docs/serve-security.md)."""
    deadline = time.monotonic() + 30
    while True:
        status, headers, doc = server.request("GET", "/api/v1/openapi.json",
                                              token=OPERATE_TOKEN)
        if status != 429 or time.monotonic() > deadline:
            assert status == 200, (status, doc)
            return doc
        wait = {k.lower(): v for k, v in headers.items()}.get("retry-after", "1")
        time.sleep(float(wait))  # the limit's own wall time


def cli_json(project: Project, *args: str) -> Any:
    done = project.cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def validator(document: dict[str, Any], method: str, path: str) -> Any:
    """A validator of the 200 answer of ``method path`` (its ``$ref``s resolved in the
    served document)."""
    from jsonschema import Draft202012Validator

    schema = document["paths"][path][method]["responses"]["200"]["content"][
        "application/json"]["schema"]
    # a named, closed shape: a free-form object would take any document
    name = schema["$ref"].removeprefix("#/components/schemas/")
    assert document["components"]["schemas"][name]["additionalProperties"] is False, name
    return Draft202012Validator({**schema, "components": document["components"]})


def test_every_cli_document_matches_the_published_schema(project: Project,
                                                         server: Server) -> None:
    document = _published(server)
    eid = project.seeded["backup_last"]
    at = cli_json(project, "history", "backup", "--limit", "2")["executions"][1]["scheduled_at"]
    cases: list[tuple[tuple[str, ...], str, str]] = [
        (("list",), "get", "/api/v1/jobs"),
        (("next", "report", "-n", "3"), "get", "/api/v1/jobs/{job_id}/next"),
        (("history", "--status", "succeeded,failed,dead_letter,skipped", "--limit", "200"),
         "get", "/api/v1/skips"),
        (("logs", str(eid)), "get", "/api/v1/executions/{execution_id}/logs"),
        (("why", "backup", at), "get", "/api/v1/why/{job_id}"),
        (("status",), "get", "/api/v1/status"),
        (("pause", "report"), "post", "/api/v1/jobs/{job_id}/pause"),
        (("resume", "report"), "post", "/api/v1/jobs/{job_id}/resume"),
        (("replay", "backup", "--since", "3h", "--dry-run"), "post",
         "/api/v1/jobs/{job_id}/replay"),
        (("trigger", "backup"), "post", "/api/v1/jobs/{job_id}/trigger"),
    ]
    seen: set[str] = set()
    for args, method, path in cases:
        doc = cli_json(project, *args)
        errors = [f"{list(e.absolute_path)}: {e.message}"
                  for e in validator(document, method, path).iter_errors(doc)]
        assert not errors, (args, errors[:5])
        seen.update(args[:1] if doc.get("lines", doc.get("executions", True)) else ())
    # the data was not empty where it matters: the nested shapes were checked too
    assert {"history", "logs"} <= seen


def test_published_schemas_are_closed_and_name_every_key(server: Server) -> None:
    """Every response object lists all its keys as required and allows no other."""
    schemas = _published(server)["components"]["schemas"]
    for name, schema in schemas.items():
        if name == "ReplayBody":  # a request body
            continue
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        optional = {"Occurrence": {"reason", "request"}, "Problem": {"instance"}}.get(name, set())
        assert set(schema["required"]) == set(schema["properties"]) - optional, name
    execution = schemas["Execution"]["properties"]
    assert execution["id"] == {"type": "integer", "title": "Id"}
    assert {"exit_code", "signal", "cpu_seconds", "fenced_status"} <= set(execution)
