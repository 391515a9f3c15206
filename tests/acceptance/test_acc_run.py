"""What a user sees of SPEC sections 3 and 4 through the command line: a real
``cronctl run``, driven by ``trigger``, ``cancel``, ``history`` and ``logs``."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from acc_helpers import CRONCTL, Run, clean_env

SCRIPT = ("echo job=$CRONCTL_JOB_ID exec=$CRONCTL_EXECUTION_ID attempt=$CRONCTL_ATTEMPT "
          "occ=$CRONCTL_OCCURRENCE_ID at=$CRONCTL_SCHEDULED_AT params=$CRONCTL_PARAMETERS")
JOBS = f"""
[jobs.slow]
cron = "@yearly"
command = ["sleep", "30"]
kill_timeout = "1s"

[jobs.env]
cron = "@yearly"
command = ["sh", "-c", "{SCRIPT}"]
parameters = {{ a = 1 }}
"""


class Scheduler:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []

    def read_until(self, needle: str, timeout: float = 20) -> None:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            if needle in line:
                return
        raise AssertionError(f"{needle!r} not logged:\n{''.join(self.lines)}")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        assert self.proc.stderr is not None
        self.lines.extend(self.proc.stderr.readlines())
        return rc


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[Scheduler]:
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "a.toml").write_text(JOBS)
    with subprocess.Popen([str(CRONCTL), "run", "--log-format", "json"], cwd=tmp_path,
                          env=clean_env(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as proc:
        sched = Scheduler(proc)
        try:
            sched.read_until("ready")
            yield sched
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_trigger_cancel_history_logs_against_a_running_scheduler(
    run: Run, scheduler: Scheduler
) -> None:
    done = run("trigger", "env", "--wait", "--json")
    assert done.rc == 0, str(done)
    execution = done.json()["execution"]
    assert execution["status"] == "succeeded" and execution["origin"] == "manual"
    (line,) = [ln["message"] for ln in run("logs", str(execution["id"]), "--json").json()["lines"]]
    assert f"job=env exec={execution['id']} attempt=1 " in line
    assert f"occ={execution['occurrence_id']}" in line
    assert 'params={"a": 1}' in line or 'params={"a":1}' in line

    queued = run("trigger", "slow", "--json")
    assert queued.rc == 0, str(queued)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        rows = run("history", "slow", "--json").json()["executions"]
        if rows and rows[0]["status"] == "running":
            break
    assert rows and rows[0]["status"] == "running", rows
    cancelled = run("cancel", str(rows[0]["id"]), "--wait")
    assert cancelled.rc == 0, str(cancelled)
    (row,) = run("history", "slow", "--json").json()["executions"]
    assert row["status"] == "cancelled"
    assert scheduler.stop() == 0
    for text in scheduler.lines:
        json.loads(text)  # --log-format json: every line is one JSON object


def test_json_log_lines_that_name_a_job_carry_it_as_a_field(
    run: Run, scheduler: Scheduler
) -> None:
    assert run("trigger", "env", "--wait").rc == 0
    assert scheduler.stop() == 0
    records = [json.loads(text) for text in scheduler.lines]
    naming = [r for r in records if "job=" in r["message"]]
    assert naming
    assert all(r.get("job") for r in naming), naming
