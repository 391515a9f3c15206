"""Through a real ``cronctl run``: a command that leaves ``setsid sleep 300`` behind and
exits 0 succeeds, and the sleep is gone within ``kill_timeout`` of its end."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl.jobs.model import ExecutionStatus

pytestmark = pytest.mark.slow


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_setsid_sleep_is_gone_after_a_successful_attempt(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    pid_file = tmp_path / "pid"
    line = (f"setsid sh -c 'echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; "
            f"exec sleep 300' & while [ ! -s {pid_file} ]; do sleep 0.01; done; exit 0")
    at = datetime.now(UTC) + timedelta(seconds=3)  # fires once
    project.jobs(f'[jobs.leave]\ncron = "{at.second} {at.minute} {at.hour} * * *"\n'
                 f'shell = true\ncommand = "{line}"\nkill_timeout = "1s"\nmax_attempts = 1\n')
    running = project.start()
    try:
        deadline = time.monotonic() + 20
        rows: list = []  # type: ignore[type-arg]
        while not rows and time.monotonic() < deadline:
            store = open_sqlite(project)
            try:
                rows = [r for r in store.list_executions(job_id="leave", limit=5)
                        if r.status.is_final]
            finally:
                store.close()
            time.sleep(0.1)
        assert rows, running.text()
        ended = time.monotonic()
        pid = int(pid_file.read_text())
        while alive(pid) and time.monotonic() - ended < 1.0:
            time.sleep(0.02)
        assert not alive(pid), "the setsid sleep outlived its attempt"
    finally:
        running.stop()
    assert rows[0].status is ExecutionStatus.SUCCEEDED, rows[0].error


def test_a_setsid_process_of_a_killed_scheduler_ends_before_the_next_attempt(
        tmp_path: Path) -> None:
    """The scheduler is SIGKILLed while its command runs: the command's process group dies
    with it (the parent-death signal), but what the command started with ``setsid`` does
    not. Recovery ends it (it ran on beside the next attempt before)."""
    import os
    import signal

    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    pid_file = tmp_path / "pid"
    line = (f"setsid sh -c 'echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; "
            f"exec sleep 300' & exec sleep 60")
    project.jobs(f'[jobs.leave]\ncron = "0 0 3 * * *"\nshell = true\ncommand = "{line}"\n'
                 'max_attempts = 2\n')
    first = project.start(log_name="first.log")
    second = None
    pid = None
    try:
        assert first.wait_for(lambda t: "ready node=" in t, 20), first.text()
        assert project.cli("trigger", "leave").returncode == 0
        deadline = time.monotonic() + 10
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        pid = int(pid_file.read_text())
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.proc.wait(5)
        assert alive(pid)  # it escaped the process group
        pid_file.unlink()
        second = project.start(log_name="second.log")
        assert second.wait_for(lambda t: "ready node=" in t, 20), second.text()
        assert second.wait_for(lambda t: "left running when its scheduler died" in t, 10), (
            second.text())
        ended = time.monotonic()
        while alive(pid) and time.monotonic() - ended < 2.0:
            time.sleep(0.02)
        assert not alive(pid), "the setsid sleep of the killed scheduler's attempt lives on"
    finally:
        if second is not None:
            second.stop()
        first.kill()
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
