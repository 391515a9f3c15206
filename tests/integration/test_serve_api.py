"""``cronctl serve``'s API against a real server process on a real SQLite database:
every endpoint answers exactly what the CLI's ``--json`` prints for the same query (the
same serializers, SPEC section 10), pages, problems, tokens, roles, the audit log and the
OpenAPI document."""

from __future__ import annotations

import json
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_support import (
    OPERATE_TOKEN,
    READ_TOKEN,
    Project,
    Server,
    make_project,
    seed,
    start_server,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = make_project(tmp_path_factory.mktemp("serve"))
    seed(project)
    return project


@pytest.fixture(scope="module")
def server(project: Project) -> Iterator[Server]:
    server = start_server(project)
    yield server
    server.stop()


def cli_json(project: Project, *args: str) -> Any:
    done = project.cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cli_error(project: Project, *args: str) -> str:
    done = project.cli(*args)
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ")
    return line.removeprefix("error: ")


def settled(api: Callable[[], Any], cli: Callable[[], Any]) -> tuple[Any, Any]:
    """Both documents; read again when they differ (a next fire may tick over between the
    two reads), up to three times."""
    for _ in range(3):
        a, c = api(), cli()
        if a == c:
            break
    return a, c


def test_every_read_endpoint_answers_the_cli_json(project: Project, server: Server) -> None:
    eid = project.seeded["backup_last"]
    at = cli_json(project, "history", "backup", "--limit", "3")["executions"][1]["scheduled_at"]
    pairs: list[tuple[str, tuple[str, ...]]] = [
        ("/api/v1/jobs", ("list",)),
        ("/api/v1/jobs/report/next?n=7&from=2026-03-01T00:00:00Z",
         ("next", "report", "-n", "7", "--from", "2026-03-01T00:00:00Z")),
        ("/api/v1/jobs/report/next?n=3&from=2026-11-01T05:00:00",
         ("next", "report", "-n", "3", "--from", "2026-11-01T05:00:00")),
        (f"/api/v1/executions/{eid}/logs", ("logs", str(eid))),
        ("/api/v1/why/backup?at=" + urllib.parse.quote(at), ("why", "backup", at)),
        ("/api/v1/why/report?at=2026-03-08T02:30:00", ("why", "report", "2026-03-08T02:30:00")),
        ("/api/v1/status", ("status",)),
        ("/api/v1/skips?job=backup", ("history", "backup", "--status", "skipped")),
        ("/api/v1/skips?job=backup&since=4d&until=2026-12-31T00:00:00Z",
         ("history", "backup", "--status", "skipped", "--since", "4d", "--until",
          "2026-12-31T00:00:00Z")),
    ]
    for path, args in pairs:
        api, cli = settled(lambda p=path: server.get(p), lambda a=args: cli_json(project, *a))
        assert api == cli, path
    # what main's commands gained since the views were split off answers here too
    assert all({"after", "calendar"} <= set(job) for job in server.get("/api/v1/jobs")["jobs"])
    assert "excluded" in server.get("/api/v1/jobs/report/next?n=2")
    skips = server.get("/api/v1/skips?job=backup")["executions"]
    assert skips and all(s["id"] is None and s["skip_id"] and "detail" in s for s in skips)
    ran = server.get("/api/v1/executions?job=backup&limit=1")["executions"][0]
    assert {"exit_code", "signal", "cpu_seconds", "max_rss_bytes", "fenced_status",
            "fenced_at"} <= set(ran)
    # executions: the CLI's document plus the cursor of the next page
    for query, args in [
        ("?job=backup&limit=5", ("history", "backup", "--limit", "5")),
        ("?status=failed,dead_letter", ("history", "--status", "failed,dead_letter")),
        ("?status=succeeded,skipped&limit=50", ("history", "--status", "succeeded,skipped",
                                                 "--limit", "50")),
        ("?since=3h&until=1h", ("history", "--since", "3h", "--until", "1h")),
    ]:
        def api(q: str = query) -> Any:
            doc = server.get("/api/v1/executions" + q)
            assert set(doc) == {"executions", "next_cursor"}
            return {"executions": doc["executions"]}

        got, want = settled(api, lambda a=args: cli_json(project, *a))
        assert got == want, query
    # one job, one execution: their entries of `list` and `history`
    listed = {job["id"]: job for job in cli_json(project, "list")["jobs"]}
    assert server.get("/api/v1/jobs/backup") == listed["backup"]
    history = {e["id"]: e for e in cli_json(project, "history", "--limit", "100")["executions"]}
    assert server.get(f"/api/v1/executions/{eid}") == history[eid]


def test_cursor_pages_walk_the_whole_history_newest_first(project: Project,
                                                          server: Server) -> None:
    whole = cli_json(project, "history", "--limit", "1000")["executions"]
    seen: list[dict[str, Any]] = []
    path = "/api/v1/executions?limit=7"
    pages = 0
    while True:
        doc = server.get(path)
        seen += doc["executions"]
        pages += 1
        if doc["next_cursor"] is None:
            break
        path = "/api/v1/executions?limit=7&cursor=" + doc["next_cursor"]
    assert seen == whole
    assert pages == len(whole) // 7 + 1


def test_after_seq_returns_only_the_newer_lines(project: Project, server: Server) -> None:
    eid = project.seeded["backup_last"]
    lines = server.get(f"/api/v1/executions/{eid}/logs")["lines"]
    assert len(lines) == 2
    later = server.get(f"/api/v1/executions/{eid}/logs?after_seq={lines[0]['seq']}")
    assert later["lines"] == lines[1:]
    assert server.get(f"/api/v1/executions/{eid}/logs?after_seq={lines[1]['seq']}")[
        "lines"] == []


@pytest.mark.parametrize(("path", "status", "args"), [
    ("/api/v1/jobs/nope", 404, ("why", "nope", "now")),
    ("/api/v1/why/nope?at=now", 404, ("why", "nope", "now")),
    ("/api/v1/executions/987654", 404, ("logs", "987654")),
    ("/api/v1/executions/987654/logs", 404, ("logs", "987654")),
    ("/api/v1/executions?since=yesterday-ish", 400, ("history", "--since", "yesterday-ish")),
    ("/api/v1/executions?status=exploded", 400, ("history", "--status", "exploded")),
    ("/api/v1/why/backup?at=2026-13-01", 400, ("why", "backup", "2026-13-01")),
    ("/api/v1/jobs/report/next?from=soon", 400, ("next", "report", "--from", "soon")),
    # integers are declared as such in the OpenAPI document, and keep the CLI's message
    ("/api/v1/executions?limit=lots", 400, ("history", "--limit", "lots")),
    ("/api/v1/jobs/report/next?n=0", 400, ("next", "report", "-n", "0")),
    ("/api/v1/executions/0/logs", 400, ("logs", "0")),
])
def test_errors_are_problem_documents_with_the_cli_message(
        project: Project, server: Server, path: str, status: int, args: tuple[str, ...]
) -> None:
    got, headers, doc = server.request("GET", path, token=READ_TOKEN)
    assert got == status
    assert headers["content-type"] == "application/problem+json"
    assert doc["status"] == status and doc["type"] == "about:blank" and doc["title"]
    assert doc["detail"] == cli_error(project, *args)


def test_a_bad_cursor_limit_or_id_is_a_400_problem(project: Project, server: Server) -> None:
    eid = project.seeded["backup"]
    for path in ("/api/v1/executions?cursor=not-a-cursor", "/api/v1/executions?limit=0",
                 "/api/v1/executions?limit=lots", f"/api/v1/executions/{eid}/logs?after_seq=-1",
                 "/api/v1/executions/abc", "/api/v1/jobs/backup/next?n=0"):
        status, _, doc = server.request("GET", path, token=READ_TOKEN)
        assert (status, doc["status"]) == (400, 400), path
        assert doc["detail"] and "\n" not in doc["detail"]


def test_tokens_roles_and_the_audit_log(project: Project, server: Server) -> None:
    assert server.request("GET", "/api/v1/jobs")[0] == 401
    status, headers, doc = server.request("GET", "/api/v1/jobs", token="guess")
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    assert server.request("GET", "/api/v1/jobs", token=READ_TOKEN)[0] == 200
    status, _, doc = server.request("POST", "/api/v1/jobs/backup/pause", token=READ_TOKEN)
    assert status == 403 and "operate" in doc["detail"]
    assert server.request("POST", "/api/v1/jobs/backup/pause", token="guess")[0] == 401
    # pause/resume: the CLI's documents
    status, _, paused = server.request("POST", "/api/v1/jobs/report/pause", token=OPERATE_TOKEN)
    assert status == 200
    assert paused == {"job": "report", "paused": True, "changed": True}
    again = server.request("POST", "/api/v1/jobs/report/pause", token=OPERATE_TOKEN)[2]
    assert again == cli_json(project, "pause", "report")
    resumed = server.request("POST", "/api/v1/jobs/report/resume", token=OPERATE_TOKEN)[2]
    assert resumed == {"job": "report", "paused": False, "changed": True}
    assert server.request("POST", "/api/v1/jobs/nope/pause", token=OPERATE_TOKEN)[0] == 404
    # replay --dry-run: the CLI's document
    body = {"since": "2026-11-01T00:00:00Z", "until": "2026-11-01T01:00:00Z", "dry_run": True}
    status, _, planned = server.request("POST", "/api/v1/jobs/backup/replay", body=body,
                                        token=OPERATE_TOKEN)
    assert status == 200
    assert planned == cli_json(project, "replay", "backup", "--since", body["since"],
                               "--until", body["until"], "--dry-run")
    status, _, doc = server.request("POST", "/api/v1/jobs/backup/replay", token=OPERATE_TOKEN,
                                    body={"since": "2026-11-01T00:00:00Z", "until": "2099-01-01"})
    assert status == 400 and doc["detail"] == cli_error(
        project, "replay", "backup", "--since", "2026-11-01T00:00:00Z", "--until",
        "2099-01-01")
    # cancel of a finished execution: 409 with the CLI's message
    eid = project.seeded["backup"]
    status, _, doc = server.request("POST", f"/api/v1/executions/{eid}/cancel",
                                    token=OPERATE_TOKEN)
    assert status == 409 and doc["detail"] == cli_error(project, "cancel", str(eid))
    # refused for its parameters before it ran: still an audit row
    status, _, doc = server.request("POST", "/api/v1/executions/abc/cancel", token=OPERATE_TOKEN)
    assert status == 400 and doc["detail"] == cli_error(project, "cancel", "abc")
    # every POST is an audit row; no token is ever stored
    rows = cli_json(project, "audit", "--limit", "100")["audit"]
    seen = [(r["actor"], r["action"], r["target"], r["status"]) for r in rows]
    # (the refused "guess" is tallied, not a row of its own: test_serve_security.py)
    for expected in [("viewer", "pause", "backup", 403),
                     ("ops", "pause", "report", 200), ("ops", "resume", "report", 200),
                     ("ops", "pause", "nope", 404), ("ops", "replay", "backup", 200),
                     ("ops", "replay", "backup", 400), ("ops", "cancel", str(eid), 409),
                     ("ops", "cancel", "abc", 400)]:
        assert expected in seen
    assert [r["at"] for r in rows] == sorted((r["at"] for r in rows), reverse=True)
    assert all(r["client"] == "127.0.0.1" for r in rows)
    dump = "\n".join(sqlite3.connect(project.url.removeprefix("sqlite:///")).iterdump())
    for token in (OPERATE_TOKEN, READ_TOKEN, "guess"):
        assert token not in dump
        assert token not in json.dumps(rows)


def test_openapi_document_validates_and_lists_every_endpoint(server: Server) -> None:
    from openapi_spec_validator import validate

    assert server.request("GET", "/api/v1/openapi.json")[0] == 401  # for clients only
    doc = server.get("/api/v1/openapi.json", token=READ_TOKEN)
    validate(doc)
    assert doc["openapi"].startswith("3.")
    expected = {
        ("get", "/api/v1/jobs"), ("get", "/api/v1/jobs/{job_id}"),
        ("get", "/api/v1/jobs/{job_id}/next"), ("get", "/api/v1/executions"),
        ("get", "/api/v1/executions/{execution_id}"),
        ("get", "/api/v1/executions/{execution_id}/logs"), ("get", "/api/v1/skips"),
        ("get", "/api/v1/why/{job_id}"), ("get", "/api/v1/status"),
        ("post", "/api/v1/jobs/{job_id}/trigger"),
        ("post", "/api/v1/executions/{execution_id}/cancel"),
        ("post", "/api/v1/jobs/{job_id}/pause"), ("post", "/api/v1/jobs/{job_id}/resume"),
        ("post", "/api/v1/jobs/{job_id}/replay"),
    }
    listed = {(method, path) for path, item in doc["paths"].items() for method in item}
    assert listed == expected  # the dashboard's pages and forms stay out of it
    # every operation requires the bearer token and may be refused by the gate
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert doc["security"] == [{"bearer": []}]
    for item in doc["paths"].values():
        for operation in item.values():
            assert {"401", "413", "421", "429"} <= set(operation["responses"])
    params = {p["name"] for p in doc["paths"]["/api/v1/executions"]["get"]["parameters"]}
    assert {"job", "status", "since", "until", "limit", "cursor"} <= params
    assert "from" in {p["name"] for p in doc["paths"]["/api/v1/jobs/{job_id}/next"]["get"][
        "parameters"]}


def test_without_a_tokens_file_serve_does_not_start(tmp_path: Path) -> None:
    # Over TCP only a token says who may read the jobs' output: no tokens file, no server.
    project = make_project(tmp_path, tokens=False)
    done = project.cli("serve", "--listen", "127.0.0.1:1", timeout=30)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: 'cronctl serve' needs [api] tokens_file")
    assert "cronctl token add NAME --role operate" in line and "cronctl init" in line


def test_a_slow_read_is_answered_503(tmp_path: Path) -> None:
    # A deadline no real read meets: the request is answered, with a problem, on time.
    project = make_project(tmp_path, extra_api='query_timeout = "1ms"\n')
    seed(project)
    server = start_server(project)
    try:
        status, _, doc = server.request("GET", "/api/v1/status", token=READ_TOKEN)
        assert status == 503
        assert "query_timeout" in doc["detail"]
    finally:
        server.stop()


def test_start_up_errors_are_one_line(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (tmp_path / "tokens").write_text("ops operate\n")
    done = project.cli("serve")
    assert done.returncode == 1
    assert done.stderr.strip() == (f"error: [api] tokens_file {tmp_path / 'tokens'}:1: write "
                                   "'name role sha256hex' (3 words, not 2)")
    (tmp_path / "tokens").unlink()
    done = project.cli("serve")
    assert (done.returncode, done.stderr.count("\n")) == (1, 1)
    assert "No such file or directory" in done.stderr
    done = project.cli("serve", "--listen", "host:99999")
    assert (done.returncode, done.stderr.count("\n")) == (2, 1)
    assert "--listen" in done.stderr and "Traceback" not in done.stderr
