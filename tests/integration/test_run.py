"""``cronctl run`` as a real process on a real SQLite file."""

from __future__ import annotations

import contextlib
import signal
import socket
import time
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite, pid_alive

from cronctl.jobs.model import ExecutionStatus

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")


def test_runs_command_and_python_jobs_every_second_then_stops_cleanly(project: Project) -> None:
    pidfile = project.root / "child.pid"
    project.jobs(f'''
[jobs.echo]
every = "1s"
command = ["sh", "-c", "echo tick $CRONCTL_JOB_ID $CRONCTL_ATTEMPT"]

[jobs.py]
every = "1s"
target = "python:cronctl_test_handlers:work"

[jobs.long]
cron = "* * * * * *"
command = ["sh", "-c", "echo $$ > {pidfile}; exec sleep 60"]
''')
    run = project.start("-v")  # each execution's own line (DEBUG when they share a wake)
    try:
        assert run.wait_for(lambda t: t.count("finished job=py") >= 3), run.text()
        assert pidfile.exists()
        child = int(pidfile.read_text())
        assert pid_alive(child)
    finally:
        code = run.stop()
    text = run.text()
    assert code == 0, text
    assert "ready node=node-a" in text and "stopped node=node-a" in text
    assert not pid_alive(child), "a child process outlived the scheduler"
    store = open_sqlite(project)
    try:
        for job in ("echo", "py"):
            rows = store.list_executions(job_id=job, limit=None)
            assert len([r for r in rows if r.status is ExecutionStatus.SUCCEEDED]) >= 2, rows
            planned = [r.scheduled_at for r in rows]
            assert len(planned) == len(set(planned))
            assert all(r.scheduled_at.microsecond == 0 for r in rows)
            done = next(r for r in rows if r.status is ExecutionStatus.SUCCEEDED)
            lines = [line.message for line in store.read_logs(done.id)]
            expected = "tick echo 1" if job == "echo" else "hello from py attempt 1"
            assert expected in lines, lines
        long = store.list_executions(job_id="long", limit=None)
        # skip overlap: one long execution, cancelled at shutdown after shutdown_timeout
        assert [r.status for r in long] == [ExecutionStatus.CANCELLED]
        py = store.list_executions(job_id="py", status=ExecutionStatus.SUCCEEDED, limit=1)[0]
        assert (py.progress_done, py.progress_message) == (1, "done")
    finally:
        store.close()


def test_hung_command_is_killed_at_its_timeout(project: Project) -> None:
    pidfile = project.root / "hung.pid"
    project.jobs(f'''
[jobs.hung]
cron = "*/2 * * * * *"
command = ["sh", "-c", "echo $$ > {pidfile}; exec sleep 60"]
timeout = "1s"
kill_timeout = "1s"
max_attempts = 1
''')
    run = project.start()
    try:
        assert run.wait_for(lambda t: "timed out job=hung" in t), run.text()
        child = int(pidfile.read_text())
        deadline = time.monotonic() + 4
        while pid_alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(child)
    finally:
        assert run.stop() == 0
    store = open_sqlite(project)
    try:
        rows = store.list_executions(job_id="hung", limit=None)
        first = rows[-1]
        assert first.status is ExecutionStatus.DEAD_LETTER  # its only attempt timed out
        assert "timed out" in (first.error or "")
    finally:
        store.close()


def test_sd_notify_ready_status_watchdog_stopping(project: Project, tmp_path: Path) -> None:
    project.jobs('[jobs.a]\nevery = "1s"\ncommand = ["true"]\n')
    address = f"@cronctl-test-{time.monotonic_ns()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + address[1:])
    sock.settimeout(0.2)
    messages: list[str] = []
    run = project.start(NOTIFY_SOCKET=address, WATCHDOG_USEC="400000")
    try:
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and sum("WATCHDOG=1" in m for m in messages) < 2:
            with contextlib.suppress(TimeoutError):
                messages.append(sock.recv(4096).decode())
        run.signal(signal.SIGTERM)
        assert run.proc.wait(10) == 0
        while True:
            try:
                messages.append(sock.recv(4096).decode())
            except (TimeoutError, BlockingIOError):
                break
    finally:
        run.kill()
        sock.close()
    joined = "\n".join(messages)
    assert "READY=1" in joined and "STATUS=scheduling " in joined, messages
    assert sum("WATCHDOG=1" in m for m in messages) >= 2
    assert "STOPPING=1" in joined
    ready = next(i for i, m in enumerate(messages) if "READY=1" in m)
    stopping = next(i for i, m in enumerate(messages) if "STOPPING=1" in m)
    assert ready < stopping


def test_sighup_with_invalid_jobs_keeps_running_then_valid_reload_applies(
        project: Project) -> None:
    project.jobs('[jobs.a]\nevery = "1s"\ncommand = ["true"]\n')
    run = project.start("-v", "--log-format", "json")  # each fire's own line
    try:
        assert run.wait_for(lambda t: '"fired job=a' in t), run.text()
        project.jobs('[jobs.a]\nevery = "1s"\ncommand = ["true"]\nbogus_key = 1\n'
                     '[jobs.b]\ncron = "61 * * * * *"\ncommand = ["true"]\n')
        run.signal(signal.SIGHUP)
        assert run.wait_for(lambda t: "reload rejected" in t), run.text()
        text = run.text()
        assert "bogus_key" in text and "61" in text  # every violation logged
        marker = len(text)
        assert run.wait_for(lambda t: '"fired job=a' in t[marker:]), "stopped firing"
        project.jobs('[jobs.b]\nevery = "1s"\ncommand = ["true"]\n')
        run.signal(signal.SIGHUP)
        assert run.wait_for(lambda t: '"fired job=b' in t), run.text()
    finally:
        assert run.stop() == 0
    import json

    lines = [json.loads(line) for line in run.text().splitlines()]
    fired = [entry for entry in lines if entry["message"].startswith("fired job=")]
    assert fired and all("job" in entry and "exec" in entry for entry in fired)


def test_invalid_jobs_at_start_exit_1_with_every_violation(project: Project) -> None:
    project.jobs('[jobs.a]\ncron = "61 * * * * *"\ncommand = ["true"]\n'
                 '[jobs.b]\nevery = "1s"\n')
    result = project.cli("run", timeout=30)
    assert result.returncode == 1
    assert "job 'a'" in result.stderr and "job 'b'" in result.stderr, result.stderr


def test_second_scheduler_with_same_node_id_refuses(project: Project) -> None:
    project.jobs('[jobs.a]\nevery = "1s"\ncommand = ["true"]\n')
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        result = project.cli("run", timeout=30)
        assert result.returncode == 1
        assert "node-a" in result.stderr and "Traceback" not in result.stderr, result.stderr
    finally:
        assert run.stop() == 0
