"""``cronctl trigger``: through a running scheduler, ``--here``, and the failure modes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl import wake
from cronctl.jobs.model import ExecutionStatus, Origin

pytestmark = pytest.mark.slow

JOBS = '''
[jobs.daily]
cron = "0 0 3 * * *"
target = "python:cronctl_test_handlers:work"

[jobs.broken]
cron = "0 0 3 * * *"
target = "python:cronctl_test_handlers:fail"
max_attempts = 2
retry_backoff = "1s"

[jobs.missing]
cron = "0 0 3 * * *"
command = ["cronctl-no-such-command-xyz"]
max_attempts = 3
retry_backoff = "10s"
'''


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    p.jobs(JOBS)
    return p


def test_trigger_wait_runs_on_the_live_scheduler(project: Project) -> None:
    run = project.start("-v")  # every execution's own line (DEBUG when several end at once)
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        result = project.cli("trigger", "daily", "--wait", "--json")
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        execution = doc["execution"]
        assert (execution["status"], execution["origin"], execution["node"]) == (
            "succeeded", "manual", "node-a")
        failed = project.cli("trigger", "broken", "--wait", "--json")
        assert failed.returncode == 1
        final = json.loads(failed.stdout)["execution"]
        assert (final["status"], final["attempt"]) == ("dead_letter", 2)
        # issue 24: a command that does not exist is not retried (it was: 30 s of silence)
        missing = project.cli("trigger", "missing", "--wait", "--json")
        assert missing.returncode == 1
        final = json.loads(missing.stdout)["execution"]
        assert (final["status"], final["attempt"], final["error"]) == (
            "dead_letter", 1, "command not found: cronctl-no-such-command-xyz")
        queued = project.cli("trigger", "daily")
        assert queued.returncode == 0 and "started: job daily, execution" in queued.stdout
        started = json.loads(project.cli("trigger", "daily", "--json").stdout)
        assert isinstance(started["execution_id"], int)
        quiet = project.cli("-q", "trigger", "daily")
        assert quiet.returncode == 0 and quiet.stdout == ""
        assert run.wait_for(lambda t: t.count("finished job=daily") == 4), run.text()
        log = project.cli("logs", str(started["execution_id"]))
        assert log.returncode == 0 and "hello from daily" in log.stdout
    finally:
        assert run.stop() == 0
    store = open_sqlite(project)
    try:
        rows = store.list_executions(job_id="daily", limit=None)
        assert len(rows) == 4 and all(r.origin is Origin.MANUAL for r in rows)
        lines = [line.message for line in store.read_logs(rows[-1].id)]
        assert "hello from daily attempt 1" in lines
    finally:
        store.close()


def test_trigger_without_live_scheduler_suggests_here(project: Project) -> None:
    project.cli("db", "upgrade")
    result = project.cli("trigger", "daily")
    assert result.returncode == 1
    assert "no live scheduler" in result.stderr and "--here" in result.stderr


def test_trigger_here_runs_in_process(project: Project) -> None:
    result = project.cli("trigger", "daily", "--here", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["status"] == "succeeded"
    store = open_sqlite(project)
    try:
        record = store.get_execution(doc["execution_id"])
        assert record is not None and record.status is ExecutionStatus.SUCCEEDED
        assert record.origin is Origin.MANUAL
        assert "hello from daily attempt 1" in [x.message for x in store.read_logs(record.id)]
    finally:
        store.close()
    failed = project.cli("trigger", "broken", "--here")
    assert failed.returncode == 1 and "dead_letter" in failed.stdout
    missing = project.cli("trigger", "missing", "--here", "--json")  # no 10 s backoff
    assert missing.returncode == 1
    doc = json.loads(missing.stdout)
    assert (doc["status"], doc["attempt"]) == ("dead_letter", 1), doc


@pytest.mark.skipif(not wake.supported(), reason="Linux abstract sockets only")
def test_a_running_scheduler_listens_for_trigger_wakes(project: Project) -> None:
    """``cronctl trigger`` tells the schedulers on its host that a request waits
    (cronctl.wake): a running one listens on its pid's socket until it stops."""

    def woken(pid: int) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            try:
                s.sendto(b"t", wake.address(pid))
            except ConnectionRefusedError:
                return False
        return True

    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        assert woken(run.proc.pid)
        assert project.cli("trigger", "daily").returncode == 0
    finally:
        assert run.stop() == 0
    assert not woken(run.proc.pid)


def test_trigger_unknown_job_exits_3(project: Project) -> None:
    result = project.cli("trigger", "dialy")
    assert result.returncode == 3
    assert "daily" in result.stderr  # did you mean


LONG = '''
[jobs.long]
cron = "0 0 3 * * *"
command = ["sleep", "30"]

[jobs.long2]
cron = "0 0 3 * * *"
command = ["sleep", "30"]
'''


def test_trigger_wait_is_bounded(project: Project) -> None:
    """``--wait`` never hangs: ``--timeout`` gives up (exit 1, the run goes on), and a
    scheduler SIGKILLed after it took the request ends the wait with what is known
    (it waited forever before); ``--timeout`` without ``--wait`` is a usage error."""
    import os
    import signal
    import subprocess
    import sys
    import time

    project.jobs(LONG, "long.toml")
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        began = time.monotonic()
        bounded = project.cli("trigger", "long", "--wait", "--timeout", "1s")
        assert time.monotonic() - began < 8, bounded
        assert bounded.returncode == 1, bounded.stderr
        assert "gave up waiting after --timeout: execution" in bounded.stderr
        assert "is still running (attempt 1)" in bounded.stderr
        assert "Traceback" not in bounded.stderr
        usage = project.cli("trigger", "long", "--timeout", "1s")
        assert usage.returncode == 2 and "add --wait" in usage.stderr, usage.stderr
        waiter = subprocess.Popen(
            [sys.executable, "-m", "cronctl", "-c", str(project.config), "trigger", "long2",
             "--wait"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=project.env(), cwd=project.root)
        assert run.wait_for(lambda t: "fired job=long2" in t, 10), run.text()
        os.killpg(run.proc.pid, signal.SIGKILL)  # the scheduler and its commands
        killed = time.monotonic()
        out, err = waiter.communicate(timeout=20)
        assert time.monotonic() - killed < 10
        assert waiter.returncode == 1, (out, err)
        # (killed after it started the run, or just before its "started" landed)
        assert "stopped answering, and no live scheduler is left" in err, err
        assert "Traceback" not in err
    finally:
        run.kill()


def test_a_request_taken_by_a_dead_node_is_taken_again_once(project: Project) -> None:
    """A node took the request and died before it ran it (its row says so: a pid that
    no longer exists): the next scheduler takes it again and runs it exactly once."""
    import socket
    import subprocess
    from datetime import UTC, datetime, timedelta

    dead = subprocess.Popen(["true"])
    dead.wait()
    store = open_sqlite(project)
    try:
        now = datetime.now(UTC)
        store.register_node("ghost", socket.gethostname(), dead.pid, now - timedelta(seconds=5),
                            ttl=timedelta(seconds=3), process_start="1")
        request = store.enqueue_trigger("daily", now=now)
        assert request is not None
        assert [t.id for t in store.take_triggers("ghost", now=now)] == [request]
    finally:
        store.close()
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()

        def done(_: str) -> bool:
            s = open_sqlite(project)
            try:
                got = s.get_trigger(request)
                return got is not None and got.done
            finally:
                s.close()

        assert run.wait_for(done, 10), run.text()
        assert "released 1 trigger requests" in run.text()
        run.wait_for(lambda _: False, 1.5)  # a second run would have started by now
        store = open_sqlite(project)
        try:
            rows = store.list_executions(job_id="daily", limit=None)
            got = store.get_trigger(request)
        finally:
            store.close()
        assert [(r.origin, r.status) for r in rows] == [(Origin.MANUAL, ExecutionStatus.SUCCEEDED)]
        assert got is not None and got.execution_id == rows[0].id and got.taken_by == "node-a"
    finally:
        assert run.stop() == 0, run.text()
