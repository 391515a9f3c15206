"""A real project for ``cronctl serve`` tests: a config, job files, a tokens file, a
SQLite state database seeded through the store, and a real ``cronctl serve`` process
on a free loopback port."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store
from cronctl.store.writerecords import SkipRun

OPERATE_TOKEN = "op-" + "7" * 40
READ_TOKEN = "rd-" + "3" * 40
JOBS = """\
[jobs.backup]
cron = "0 */10 * * * *"
command = ["sh", "-c", "echo backing up; echo done"]
description = "Nightly-ish backup of the orders database"

[jobs.report]
cron = "0 30 2 * * *"
timezone = "America/New_York"
command = ["true"]
description = "Daily report, 02:30 New York"

[jobs.sync]
cron = "0 0 0 1 1 *"  # yearly: no cron run competes with the tests' own runs of it
command = ["sh", "-c", "for i in $(seq 1 60); do echo \\"line $i\\"; sleep 0.5; done"]
description = "Slow sync that prints a line every half second"

[jobs.flaky]
every = "15m"
command = ["false"]
max_attempts = 1
"""


@dataclass
class Project:
    root: Path
    config: Path
    url: str
    seeded: dict[str, int] = field(default_factory=dict)

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cronctl", "-c", str(self.config), *args],
                              capture_output=True, text=True, timeout=timeout, cwd=self.root)


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def make_project(root: Path, *, tokens: bool = True, extra_api: str = "") -> Project:
    (root / "jobs.d").mkdir(parents=True, exist_ok=True)
    (root / "jobs.d" / "jobs.toml").write_text(JOBS)
    db = root / "state.db"
    api = ""
    if tokens:
        (root / "tokens").write_text(
            "# name role sha256\n"
            f"ops operate {sha(OPERATE_TOKEN)}\n"
            f"viewer read {sha(READ_TOKEN)}\n")
        api = '[api]\ntokens_file = "tokens"\n'
    if extra_api:
        api = (api or "[api]\n") + extra_api
    config = root / "cronctl.toml"
    config.write_text(f'[scheduler]\ndatabase = "sqlite:///{db}"\njobs_dir = "jobs.d"\n'
                      f'node_id = "node-a"\nheartbeat_interval = "1s"\n'
                      f'progress_flush_interval = "1s"\n\n{api}')
    return Project(root, config, f"sqlite:///{db}")


def seed(project: Project, now: datetime | None = None) -> dict[str, int]:
    """A few executions of every kind, some log lines and skip records, in the last day."""
    now = (now or datetime.now(UTC)).replace(microsecond=0)
    store = open_store(project.url, node_id="node-a")
    ids: dict[str, int] = {}
    try:
        def execution(job: str, at: datetime, status: ExecutionStatus, error: str | None = None,
                      attempt: int = 1) -> int:
            eid = store.try_insert_execution(
                job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at,
                attempt=attempt, origin=Origin.CRON, node_id="node-a", scope_node="node-a",
                target="command: true")
            assert eid is not None
            if status is ExecutionStatus.PENDING:
                return eid
            store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.RUNNING,
                             started_at=at + timedelta(seconds=1))
            if status is not ExecutionStatus.RUNNING:
                store.transition(eid, ExecutionStatus.RUNNING, status, error=error,
                                 finished_at=at + timedelta(seconds=4))
            return eid

        base = now.replace(minute=0, second=0) - timedelta(hours=17)
        for k in range(0, 17 * 6 + 6):
            at = base + timedelta(minutes=10 * k)
            if at > now - timedelta(minutes=20):
                break
            if k in (60, 61, 62, 63, 70):  # skip records below, not executions
                continue
            status = ExecutionStatus.FAILED if k % 23 == 5 else ExecutionStatus.SUCCEEDED
            eid = execution("backup", at, status,
                            error="exit status 2: pg_dump: connection refused"
                            if status is ExecutionStatus.FAILED else None)
            store.append_logs([(eid, at + timedelta(seconds=1), "INFO", "backing up"),
                               (eid, at + timedelta(seconds=3), "INFO", "done")])
            ids.setdefault("backup", eid)
            ids["backup_last"] = eid
        recent = now.replace(minute=0, second=0) - timedelta(hours=3)
        for k in range(0, 12):
            at = recent + timedelta(minutes=15 * k)
            if at > now - timedelta(minutes=20):
                break
            ids["flaky"] = execution("flaky", at, ExecutionStatus.DEAD_LETTER if k % 4 == 1
                                     else ExecutionStatus.SUCCEEDED,
                                     error="exit status 1" if k % 4 == 1 else None)
        for k in range(0, 48):
            at = recent + timedelta(minutes=5 * k)
            if at > now - timedelta(minutes=10):
                break
            if k % 9 != 4:
                execution("sync", at, ExecutionStatus.SUCCEEDED)
            else:
                store.record_skips([SkipRun("sync", "overlap", at, at, 1, "node-a", "node-a")],
                                   now=now)
        overlap = base + timedelta(minutes=700)
        store.record_skips([SkipRun("backup", "overlap", overlap, overlap, 1, "node-a",
                                    "node-a"),
                            SkipRun("backup", "misfire", base + timedelta(minutes=600),
                                    base + timedelta(minutes=630), 4, "node-a", "node-a")],
                           now=now)
    finally:
        store.close()
    project.seeded = ids
    return ids


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    process: subprocess.Popen[str]
    base: str

    def request(self, method: str, path: str, *, token: str | None = None,
                body: Any = None, headers: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], Any]:
        data = None if body is None else json.dumps(body).encode()
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if data is not None:
            sent["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                raw = response.read()
                status, got = response.status, dict(response.headers)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            status, got = exc.code, dict(exc.headers)
        kind = got.get("content-type", "")
        return status, got, json.loads(raw) if "json" in kind else raw.decode()

    def get(self, path: str, token: str | None = OPERATE_TOKEN) -> Any:
        status, _, doc = self.request("GET", path, token=token)
        assert status == 200, (path, status, doc)
        return doc

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


def start_server(project: Project, *args: str) -> Server:
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "cronctl", "-c", str(project.config), "serve", "--listen",
         f"127.0.0.1:{port}", *args],
        cwd=project.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    server = Server(process, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"cronctl serve exited: {process.communicate()[1]}")
        try:
            with urllib.request.urlopen(server.base + "/login", timeout=2):  # open to all
                return server
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)
    server.stop()
    raise AssertionError("cronctl serve did not answer within 30 s")


def memory_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (the peak) of ``pid``, in KiB, from /proc/PID/status."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def stream_post(base: str, path: str, size: int, *, headers: dict[str, str] | None = None,
                chunked: bool = False, chunk: int = 1 << 20, timeout: float = 120,
                heed_answer: bool = False) -> tuple[int | None, int, bytes]:
    """POST ``size`` bytes to ``path`` over a raw socket, a chunk at a time, as an
    attacker would: on until the server closes the connection (or, ``heed_answer``,
    until it answers). The status (``None``: no answer), how many body bytes the socket
    took, and what the server sent."""
    import select
    from urllib.parse import urlsplit

    where = urlsplit(base)
    sock = socket.create_connection((where.hostname, where.port), timeout=timeout)
    lines = [f"POST {path} HTTP/1.1", f"Host: {where.netloc}",
             "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}")
    sent, answer = 0, b""
    block = b"[" + b" " * (chunk - 1)
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while sent < size:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable and heed_answer:
                break
            if readable and not answer:
                answer = sock.recv(65536)  # keep the answer: a reset may lose it
            piece = block[:min(chunk, size - sent)]
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked
                         else piece)
            sent += len(piece)
        if chunked and sent >= size:
            sock.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    deadline = time.monotonic() + timeout
    try:
        while b"\r\n\r\n" not in answer and time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
        head, _, rest = answer.partition(b"\r\n\r\n")
        length = next((int(v) for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
                       if k.strip().lower() == b"content-length"), 0)
        while len(rest) < length and time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            rest += data
            answer += data
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        sock.close()
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
    return status, sent, answer


SCHEMATHESIS_CONFIG = Path(__file__).parent / "schemathesis.toml"


def quick_jobs(project: Project) -> None:
    """The project's jobs with a ``sync`` that ends at once: schemathesis triggers every
    job many times, and a trigger answers once a scheduler started the run, which waits
    for the slow ``sync`` of the other tests to end."""
    jobs = project.root / "jobs.d" / "jobs.toml"
    slow = 'command = ["sh", "-c", "for i in $(seq 1 60); do echo \\"line $i\\"; sleep 0.5; done"]'
    text = jobs.read_text()
    assert slow in text
    jobs.write_text(text.replace(slow, 'command = ["sh", "-c", "echo line 1"]'))


def start_scheduler(project: Project) -> subprocess.Popen[bytes]:
    """A real ``cronctl run`` on the project, registered as a live node."""
    with (project.root / "run.log").open("wb") as log:  # the child keeps its own copy
        process = subprocess.Popen([sys.executable, "-m", "cronctl", "-c",
                                    str(project.config), "run"], cwd=project.root,
                                   stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, (project.root / "run.log").read_text()
        status = project.cli("status", "--json")
        if status.returncode == 0 and json.loads(status.stdout)["nodes"]:
            return process
        time.sleep(0.2)
    process.kill()
    raise AssertionError("cronctl run registered no node within 30 s")


def schemathesis(server: Server, token: str, workdir: Path, *, seed: int, max_examples: int,
                 get_only: bool, timeout: float) -> subprocess.CompletedProcess[str]:
    """schemathesis's CLI against the server's OpenAPI document: every check (with
    :data:`SCHEMATHESIS_CONFIG`), ``token`` on every request, a fixed ``seed``; its
    example database and reports stay in ``workdir``."""
    args = [str(Path(sys.executable).parent / "schemathesis"), "--no-color", "--config-file",
            str(SCHEMATHESIS_CONFIG), "run", f"{server.base}/api/v1/openapi.json",
            "-H", f"Authorization: Bearer {token}", "--checks", "all", "--seed", str(seed),
            "--max-examples", str(max_examples), "--request-timeout", "20"]
    if get_only:
        args += ["--include-method", "GET"]
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=workdir)
