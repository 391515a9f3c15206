"""``cronctl serve`` as an attacker meets it, against a real server process: a huge body
from nobody, a rebound DNS name, guessed tokens, a flood of unauthenticated POSTs, a
session after logout or past its expiry, and a tokens file edited while it runs
(docs/serve-security.md)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import time
import urllib.parse
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
    memory_kib,
    sha,
    start_server,
    stream_post,
)

pytestmark = pytest.mark.slow

HUGE = 300 * 10**6
MiB = 1024


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path)


@pytest.fixture
def server(project: Project) -> Iterator[Server]:
    server = start_server(project)
    yield server
    server.stop()


def raw(server: Server, method: str, path: str, headers: dict[str, str] | None = None,
        body: str | None = None) -> tuple[int, dict[str, str], str]:
    """One request, redirects not followed, every header as sent."""
    where = urllib.parse.urlsplit(server.base)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read().decode())
    finally:
        conn.close()


def login(server: Server, token: str) -> str:
    """The session cookie a login with ``token`` sets (``name=value``)."""
    status, headers, _ = raw(server, "POST", "/login",
                             {"Content-Type": "application/x-www-form-urlencoded"},
                             urllib.parse.urlencode({"token": token, "next": "/"}))
    assert status == 303, status
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=" in cookie
    return cookie.split(";", 1)[0]


def audit(project: Project) -> list[dict[str, Any]]:
    done = project.cli("audit", "--limit", "1000", "--json")
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)["audit"]
    return rows


def test_an_unauthenticated_huge_post_is_401_without_reading_it(server: Server) -> None:
    pid = server.process.pid
    for _ in range(10):  # warm: what the first requests load is not the body's cost
        server.request("GET", "/api/v1/jobs", token=READ_TOKEN)
    before = memory_kib(pid)
    status, _, answer = stream_post(server.base, "/api/v1/jobs/backup/replay", HUGE)
    assert status == 401, answer[:300]
    assert b"application/problem+json" in answer
    status, _, _ = stream_post(server.base, "/api/v1/jobs/backup/replay", HUGE, chunked=True)
    assert status == 401
    after = memory_kib(pid)
    assert after["VmHWM"] - before["VmHWM"] <= 10 * MiB, (before, after)
    # with a valid token, too large is 413: at once by Content-Length, or at the first
    # byte over 1 MiB of a body without one
    auth = {"Authorization": f"Bearer {OPERATE_TOKEN}"}
    status, _, answer = stream_post(server.base, "/api/v1/jobs/backup/replay", HUGE,
                                    headers=auth)
    assert status == 413 and b"1 MiB" in answer
    status, sent, _ = stream_post(server.base, "/api/v1/jobs/backup/replay", HUGE,
                                  headers=auth, chunked=True)
    assert status == 413 and sent < 50 * 2**20
    assert memory_kib(pid)["VmHWM"] - before["VmHWM"] <= 10 * MiB
    # a body under the cap still works, and a bad one is a 400 for clients only
    body = {"since": "2026-11-01T00:00:00Z", "until": "2026-11-01T01:00:00Z", "dry_run": True}
    status, _, doc = server.request("POST", "/api/v1/jobs/backup/replay", body=body,
                                    token=OPERATE_TOKEN)
    assert status == 200 and doc["dry_run"] is True
    assert server.request("POST", "/api/v1/jobs/backup/replay", body={"x": 1})[0] == 401
    assert server.request("POST", "/api/v1/jobs/backup/replay", body={"x": 1},
                          token=OPERATE_TOKEN)[0] == 400


def test_only_the_listen_address_names_and_allowed_hosts_are_answered(
        project: Project, server: Server) -> None:
    port = server.base.rsplit(":", 1)[1]
    # DNS rebinding: a page on attacker.example re-pointed at 127.0.0.1
    for host in ("attacker.example", f"attacker.example:{port}", "127.0.0.1.nip.io"):
        status, headers, doc = server.request("GET", "/api/v1/jobs", token=READ_TOKEN,
                                              headers={"Host": host})
        assert status == 421, host
        assert headers["content-type"] == "application/problem+json"
        assert "allowed_hosts" in doc["detail"]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
        status, _, _ = server.request("GET", "/api/v1/jobs", token=READ_TOKEN,
                                      headers={"Host": host})
        assert status == 200, host
    # a state-changing request from another origin is refused before anything runs
    status, _, doc = server.request("POST", "/api/v1/jobs/backup/pause", token=OPERATE_TOKEN,
                                    headers={"Origin": "http://attacker.example"})
    assert status == 403 and "Origin" in doc["detail"]
    assert server.get("/api/v1/jobs/backup", token=READ_TOKEN)["paused"] is False
    # the names a reverse proxy or the users' browsers use are listed in allowed_hosts
    server.stop()
    project.config.write_text(project.config.read_text()
                              + 'allowed_hosts = ["cron.example.com"]\n')
    again = start_server(project)
    try:
        for host, status in (("cron.example.com", 200), (f"CRON.example.com.:{port}", 200),
                             ("cron.example.com.evil", 421), ("attacker.example", 421)):
            assert again.request("GET", "/api/v1/jobs", token=READ_TOKEN,
                                 headers={"Host": host})[0] == status, host
    finally:
        again.stop()


def test_failed_authentication_is_rate_limited_per_source(server: Server) -> None:
    started = time.monotonic()
    statuses: list[int] = []
    while 429 not in statuses:
        statuses.append(server.request("GET", "/api/v1/jobs", token=f"guess-{len(statuses)}")[0])
        assert len(statuses) <= 40, statuses
    took = time.monotonic() - started
    # 10 at once, then one a second (a slow machine may see a refill or two)
    assert statuses[:10] == [401] * 10 and set(statuses[:-1]) == {401}
    assert len(statuses) - 1 <= 10 + int(took) + 1, (statuses, took)
    status, headers, doc = server.request("GET", "/api/v1/jobs", token="guess-x")
    assert status == 429 and "too many failed" in doc["detail"]
    wait = int(headers["retry-after"])
    assert 1 <= wait <= 5
    # while the source is over its limit, even the right token is not looked at: a right
    # guess looks like every other
    assert server.request("GET", "/api/v1/jobs", token=READ_TOKEN)[0] == 429
    # a request without credentials guesses nothing: still told that it needs a token
    status, headers, _ = server.request("GET", "/api/v1/jobs", token=None)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    assert raw(server, "POST", "/login", {"Content-Type": "application/x-www-form-urlencoded"},
               urllib.parse.urlencode({"token": READ_TOKEN}))[0] == 429
    time.sleep(wait + 0.2)
    assert server.request("GET", "/api/v1/jobs", token=READ_TOKEN)[0] == 200
    # a failed login is a failed authentication too
    for _ in range(3):
        status, _, page = raw(server, "POST", "/login",
                              {"Content-Type": "application/x-www-form-urlencoded"},
                              urllib.parse.urlencode({"token": "nope"}))
        if status == 429:
            break
        assert status == 401 and "unknown token" in page
    else:
        raise AssertionError("three failed logins right after the limit were all let through")


def test_refused_requests_share_one_audit_row_per_source(project: Project) -> None:
    server = start_server(project)
    try:
        assert server.request("POST", "/api/v1/jobs/report/pause", token=OPERATE_TOKEN)[0] == 200
        for n in range(25):
            status, _, _ = server.request("POST", "/api/v1/jobs/backup/pause",
                                          token=None if n % 2 else "guess")
            assert status in (401, 429)
    finally:
        server.stop()  # the open window is written at shutdown
    assert [(r["actor"], r["action"], r["status"]) for r in audit(project)
            if r["actor"] != "unauthenticated"] == [("ops", "pause", 200)]
    rows = [r for r in audit(project) if r["actor"] == "unauthenticated"]
    assert len(rows) == 1, rows
    [row] = rows
    detail = json.loads(row["detail"])
    assert detail["count"] == 25 and detail["requests"] == {"POST /api/v1/jobs/backup/pause": 25}
    assert row["client"] == "127.0.0.1" and row["action"] == "refused"
    assert "guess" not in json.dumps(rows)


def test_a_session_is_a_random_id_that_logout_ends(project: Project, server: Server) -> None:
    cookie = login(server, OPERATE_TOKEN)
    name, _, value = cookie.partition("=")
    assert name == "cronctl_session" and OPERATE_TOKEN not in value
    assert raw(server, "GET", "/api/v1/jobs", {"Cookie": cookie})[0] == 200
    # the database holds the id's digest, never the id or the token
    db = sqlite3.connect(project.url.removeprefix("sqlite:///"))
    dump = "\n".join(db.iterdump())
    db.close()
    assert value not in dump and OPERATE_TOKEN not in dump and sha(value) in dump
    # logout ends it on the server: the same cookie, replayed, is refused
    status, headers, _ = raw(server, "POST", "/logout", {"Cookie": cookie})
    assert status == 303 and headers["location"] == "/login"
    assert raw(server, "GET", "/api/v1/jobs", {"Cookie": cookie})[0] == 401
    status, headers, _ = raw(server, "GET", "/status", {"Cookie": cookie})
    assert status == 303 and headers["location"].startswith("/login?next=")


def test_a_session_ends_at_its_expiry(tmp_path: Path) -> None:
    project = make_project(tmp_path, extra_api='session_lifetime = "2s"\n')
    server = start_server(project)
    try:
        cookie = login(server, READ_TOKEN)
        assert raw(server, "GET", "/api/v1/status", {"Cookie": cookie})[0] == 200
        time.sleep(2.3)
        status, _, body = raw(server, "GET", "/api/v1/status", {"Cookie": cookie})
        assert status == 401 and "session ended" in body
    finally:
        server.stop()


def test_the_tokens_file_is_read_again_while_serve_runs(project: Project) -> None:
    server = start_server(project)
    tokens = project.root / "tokens"
    try:
        newcomer = "nc-" + "5" * 40
        assert server.request("GET", "/api/v1/jobs", token=newcomer)[0] == 401
        with tokens.open("a") as out:
            out.write(f"newcomer operate {sha(newcomer)}\n")
        assert server.request("GET", "/api/v1/jobs", token=newcomer)[0] == 200
        cookie = login(server, READ_TOKEN)
        # a token taken out stops working at once, and so do its sessions
        tokens.write_text(f"ops operate {sha(OPERATE_TOKEN)}\n")
        assert server.request("GET", "/api/v1/jobs", token=READ_TOKEN)[0] == 401
        assert raw(server, "GET", "/api/v1/jobs", {"Cookie": cookie})[0] == 401
        assert server.request("GET", "/api/v1/jobs", token=OPERATE_TOKEN)[0] == 200
        # a bad file lets nobody in (a typo must not keep a revoked token alive)
        tokens.write_text("ops operate\n")
        status, _, doc = server.request("GET", "/api/v1/jobs", token=OPERATE_TOKEN)
        assert status == 503 and "tokens_file" in doc["detail"]
        tokens.write_text(f"ops operate {sha(OPERATE_TOKEN)}\n")
        assert server.request("GET", "/api/v1/jobs", token=OPERATE_TOKEN)[0] == 200
        # SIGHUP follows [api] tokens_file to another file
        other = project.root / "tokens.new"
        other.write_text(f"viewer read {sha(READ_TOKEN)}\n")
        text = project.config.read_text().replace('tokens_file = "tokens"',
                                                  'tokens_file = "tokens.new"')
        project.config.write_text(text)
        os.kill(server.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while server.request("GET", "/api/v1/jobs", token=READ_TOKEN)[0] != 200:
            assert time.monotonic() < deadline, "SIGHUP did not switch the tokens file"
            time.sleep(0.1)
        assert server.process.poll() is None
        assert server.request("GET", "/api/v1/jobs", token=OPERATE_TOKEN)[0] == 401
    finally:
        err = server.stop()
    assert "tokens.new" in err and "Traceback" not in err
    assert OPERATE_TOKEN not in err and READ_TOKEN not in err
