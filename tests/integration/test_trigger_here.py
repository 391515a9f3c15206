"""Issue 9, finding 7: ``cronctl trigger --here`` honours ``cronctl cancel`` and
SIGTERM/SIGINT (final status ``cancelled``), and the row of a ``--here`` process that
dies is recovered by a running scheduler like any other (it is a node of its own)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite, pid_alive

from cronctl.jobs.model import ExecutionStatus
from cronctl.store.base import ExecutionRecord

pytestmark = pytest.mark.slow

HANDLERS = '''
import time
from datetime import timedelta

def patient(ctx):
    while not ctx.is_cancelled():
        time.sleep(0.05)
'''


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    (tmp_path / "handlers_pkg" / "here_handlers.py").write_text(HANDLERS)
    pids = tmp_path / "pids"
    p.jobs(f'''
[jobs.cmd]
cron = "0 0 3 * * *"
kill_timeout = "2s"
command = ["sh", "-c", "echo $$ >> {pids}; exec sleep 30"]

[jobs.py]
cron = "0 0 3 * * *"
target = "python:here_handlers:patient"

[jobs.solo]
cron = "0 0 3 * * *"
mode = "single_instance"
max_attempts = 2
command = ["sh", "-c", "echo $CRONCTL_ATTEMPT $$ >> {pids}; exec sleep 30"]
''')
    assert p.cli("db", "upgrade").returncode == 0
    return p


def _here(project: Project, job: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "cronctl", "-c", str(project.config), "trigger", job, "--here"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=project.env(),
        cwd=project.root)


def _running(project: Project, job: str, timeout: float = 10.0) -> ExecutionRecord:
    deadline = time.monotonic() + timeout
    while True:
        store = open_sqlite(project)
        try:
            rows = [r for r in store.pending_or_running(job_ids=[job])
                    if r.status is ExecutionStatus.RUNNING]
        finally:
            store.close()
        command = job != "py"
        if rows and (not command or (project.root / "pids").exists()):
            return rows[0]
        assert time.monotonic() < deadline, f"{job} never ran"
        time.sleep(0.05)


def _final(project: Project, execution_id: int) -> ExecutionRecord:
    store = open_sqlite(project)
    try:
        record = store.get_execution(execution_id)
    finally:
        store.close()
    assert record is not None
    return record


def _child(project: Project) -> int:
    return int((project.root / "pids").read_text().split()[-1])


@pytest.mark.parametrize("job", ["cmd", "py"])
def test_cancel_reaches_a_trigger_here(project: Project, job: str) -> None:
    here = _here(project, job)
    try:
        row = _running(project, job)
        result = project.cli("cancel", str(row.id))
        assert result.returncode == 0, result.stderr
        out, err = here.communicate(timeout=10)
    finally:
        if here.poll() is None:
            here.kill()
    assert here.returncode == 1, err
    assert "cancelled" in out, out + err
    record = _final(project, row.id)
    assert record.status is ExecutionStatus.CANCELLED, record
    if job == "cmd":
        assert not pid_alive(_child(project))


@pytest.mark.parametrize(("job", "sig"), [("cmd", signal.SIGTERM), ("py", signal.SIGINT),
                                          ("cmd", signal.SIGINT)])
def test_a_signal_to_trigger_here_cancels_its_attempt(project: Project, job: str,
                                                      sig: signal.Signals) -> None:
    here = _here(project, job)
    try:
        row = _running(project, job)
        here.send_signal(sig)
        out, err = here.communicate(timeout=10)
    finally:
        if here.poll() is None:
            here.kill()
    assert here.returncode == 1, err
    assert "Traceback" not in err
    record = _final(project, row.id)
    assert (record.status, record.error) == (ExecutionStatus.CANCELLED, "interrupted"), record
    assert record.finished_at is not None
    if job == "cmd":
        assert not pid_alive(_child(project))
    store = open_sqlite(project)
    try:
        assert store.live_nodes(record.finished_at, timedelta(0)) == []  # unregistered
    finally:
        store.close()


def test_the_row_of_a_killed_trigger_here_is_recovered(project: Project) -> None:
    run = project.start()
    here = _here(project, "solo")
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        row = _running(project, "solo")
        assert row.node_id.endswith(f"-here-{here.pid}")
        here.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        here.wait(5)
        store = open_sqlite(project)
        try:
            while len(rows := store.executions_of_occurrence("solo", row.occurrence_id)) < 2:
                assert time.monotonic() - killed < 3.0, run.text()
                time.sleep(0.05)
        finally:
            store.close()
        old, new = rows
        assert (old.id, old.status) == (row.id, ExecutionStatus.LOST)
        assert (new.attempt, new.node_id) == (2, "node-a")
        assert run.wait_for(lambda t: f"recovered job=solo exec={row.id}" in t, 3), run.text()
        first_child = int((project.root / "pids").read_text().split()[1])
        assert not pid_alive(first_child)  # died with the --here process
    finally:
        if here.poll() is None:
            here.kill()
        assert run.stop() == 0, run.text()
        if here.stdout is not None:
            here.stdout.close()
        if here.stderr is not None:
            here.stderr.close()
