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
