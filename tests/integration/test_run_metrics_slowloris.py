"""A hostile client of ``[metrics] listen`` (issue: 300 trickling connections exhausted
the scheduler's file descriptors and every fire then failed "Too many open files"). A
slowloris keeps 300 connections open, each sending one byte a second and never ending
its request, against a ``cronctl run`` whose descriptor limit is small (96); the metrics
server keeps a bounded number of connections and threads, every fire of a per-second job
meanwhile starts on time and succeeds, nothing is logged as a traceback, and /healthz
answers once the attack stops."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from test_run_metrics import free_port, healthz, until
from test_run_support import Project, Running

pytestmark = pytest.mark.slow

JOBS = '''
[jobs.tick]
every = "1s"
command = ["true"]
'''
ATTACKERS = 300
ATTACK_S = 8.0
NOFILE = 96


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def _count(pid: int) -> tuple[int, int]:
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    threads = int(next(line.split()[1] for line in
                       Path(f"/proc/{pid}/status").read_text().splitlines()
                       if line.startswith("Threads:")))
    return fds, threads


def _slowloris(port: int, seconds: float, pid: int) -> dict[str, int]:
    socks: list[socket.socket] = []
    most = {"fds": 0, "threads": 0, "connected": 0}
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            while len(socks) < ATTACKERS:
                s = socket.socket()
                s.setblocking(True)
                s.settimeout(1.0)
                try:
                    s.connect(("127.0.0.1", port))
                    s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                except OSError:
                    s.close()
                    break
                socks.append(s)
                most["connected"] += 1
            alive = []
            for s in socks:  # one more header byte each, never the blank line
                try:
                    s.send(b"X")
                    alive.append(s)
                except OSError:
                    s.close()
            socks = alive
            fds, threads = _count(pid)
            most["fds"], most["threads"] = max(most["fds"], fds), max(most["threads"], threads)
            time.sleep(1.0)
    finally:
        for s in socks:
            s.close()
    return most


def test_a_slowloris_takes_nothing_from_firing(tmp_path: Path) -> None:
    port = free_port()
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    project.jobs(JOBS)
    log = tmp_path / "run.log"
    with log.open("w") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cronctl", "-c", str(project.config), "run"],
            stdout=subprocess.DEVNULL, stderr=handle, env=project.env(), cwd=tmp_path,
            start_new_session=True, preexec_fn=_limit_fds)
    run = Running(proc, log)
    try:
        assert run.wait_for(lambda t: "serving metrics" in t, 20), run.text()
        assert until(lambda: healthz(port)[0] == 200)
        time.sleep(1.5)
        before = _count(proc.pid)
        began = datetime.now().astimezone()
        most = _slowloris(port, ATTACK_S, proc.pid)
        ended = datetime.now().astimezone()
        assert until(lambda: healthz(port)[0] == 200, 10), run.text()[-2000:]
        time.sleep(1.5)
    finally:
        code = run.stop()
    text = run.text()
    assert code == 0, text[-3000:]
    assert "Traceback" not in text and "Too many open files" not in text, text[-3000:]
    # bounded: at most 8 connections (a descriptor and a thread each) beyond the baseline
    assert most["fds"] <= before[0] + 8 + 4, (before, most)
    assert most["threads"] <= before[1] + 8 + 2, (before, most)
    history = project.cli("history", "tick", "--json", "--limit", "100")
    assert history.returncode == 0, history.stderr
    rows = json.loads(history.stdout)
    rows = rows["executions"] if isinstance(rows, dict) else rows
    during = [r for r in rows
              if began <= datetime.fromisoformat(r["scheduled_at"]) <= ended]
    assert len(during) >= ATTACK_S - 2, rows
    assert all(r["status"] == "succeeded" for r in during), during
    late = [(datetime.fromisoformat(r["started_at"])
             - datetime.fromisoformat(r["scheduled_at"])).total_seconds() for r in during]
    assert max(late) < 0.5, late
    with contextlib.suppress(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
