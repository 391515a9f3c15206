"""SPEC section 9 through a real ``cronctl run``: what a finished command used reaches its
row with the final status (and ``history``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

from cronctl.jobs.model import ExecutionStatus

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")


def finished_rows(project: Project, job: str, count: int = 1, timeout: float = 15.0
                  ) -> list:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    rows: list = []  # type: ignore[type-arg]
    while time.monotonic() < deadline:
        store = open_sqlite(project)
        try:
            rows = [r for r in store.list_executions(job_id=job, limit=50)
                    if r.status.is_final]
        finally:
            store.close()
        if len(rows) >= count:
            return rows
        time.sleep(0.2)
    return rows


def test_figures_are_recorded_with_the_final_status(project: Project) -> None:
    burn = ("import time; b = bytearray(32 * 1024 * 1024); t = time.process_time()\n"
            "while time.process_time() - t < 0.2: pass\nraise SystemExit(3)")
    project.jobs(f'[jobs.burn]\ncron = "* * * * * *"\ncommand = {[sys.executable, "-c", burn]!r}\n'
                 'max_attempts = 1\n'.replace("'", '"'))
    running = project.start()
    try:
        rows = finished_rows(project, "burn")
    finally:
        running.stop()
    assert rows, running.text()
    row = rows[-1]
    assert row.status is ExecutionStatus.DEAD_LETTER or row.status is ExecutionStatus.FAILED
    assert (row.exit_code, row.signal) == (3, None)
    assert row.cpu_seconds is not None and row.cpu_seconds >= 0.2
    assert row.max_rss_bytes is not None and row.max_rss_bytes >= 32 * 1024 * 1024
    shown = project.cli("history", "burn", "--wide")
    assert "EXIT" in shown.stdout and " 3 " in shown.stdout


def test_output_limit_keeps_both_ends_in_the_job_log(project: Project) -> None:
    project.jobs('[jobs.talk]\ncron = "* * * * * *"\noutput_limit = "2K"\nmax_attempts = 1\n'
                 'command = ["sh", "-c", "seq 1 1000"]\n')
    running = project.start()
    try:
        rows = finished_rows(project, "talk")
    finally:
        running.stop()
    assert rows, running.text()
    store = open_sqlite(project)
    try:
        lines = [line.message for line in store.read_logs(rows[-1].id)]
    finally:
        store.close()
    head = [str(i) for i in range(1, 1001)]
    sizes = [len(x) + 1 for x in head]
    n_head = next(i for i in range(1001) if sum(sizes[:i + 1]) > 1024)
    n_tail = next(i for i in range(1001) if sum(sizes[len(sizes) - i - 1:]) > 1024)
    dropped = head[n_head:len(head) - n_tail]
    assert lines == (head[:n_head]
                     + [f"… {len(dropped)} lines ({sum(len(x) + 1 for x in dropped)} bytes) "
                        "dropped …"]
                     + head[len(head) - n_tail:])


def test_long_running_is_sent_once_by_a_real_run(tmp_path: Path) -> None:
    from notify_support import command_events, notify_command

    script, out = notify_command(tmp_path)
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=f'\n[notify]\non = ["long_running"]\ncommand = ["{script}"]\n')
    project.jobs('[jobs.slow]\ncron = "* * * * * *"\nlong_running_after = "1s"\n'
                 'max_attempts = 1\ncommand = ["sleep", "3"]\n'
                 '[jobs.quick]\ncron = "* * * * * *"\nlong_running_after = "1s"\n'
                 'command = ["true"]\n')
    running = project.start()
    try:
        assert running.wait_for(lambda _t: len(command_events(out)) >= 1, timeout=15)
        finished_rows(project, "slow")
    finally:
        running.stop()
    got = command_events(out)
    assert {e["job"] for _, e in got} == {"slow"}
    ids = [e["execution_id"] for _, e in got]
    assert len(ids) == len(set(ids))  # once per execution
    assert all(e["status"] == "running" and e["reason"] == "running for more than 1s"
               for _, e in got)
    store = open_sqlite(project)
    try:
        slow = {r.id for r in store.list_executions(job_id="slow", limit=None)}
    finally:
        store.close()
    assert set(ids) <= slow
