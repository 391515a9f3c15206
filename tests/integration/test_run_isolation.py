"""``isolation = "process"`` (issue: a Python job could kill or bend the scheduler:
``os._exit(4)`` ended it silently, a changed ``os.environ['PATH']`` broke every later
command, ``os.chdir`` moved it, a timed-out spinning handler kept 94 % CPU). A
process-isolated attempt runs as a child through the command machinery; the scheduler
runs on, unchanged, and records the child's end."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from test_run_support import Project

pytestmark = pytest.mark.slow

HANDLERS = '''
import asyncio, os

def die():
    os._exit(4)

def bend():
    os.environ["PATH"] = "/nonexistent"
    os.chdir("/")

def spin():
    while True:
        pass

async def hello(ctx):
    ctx.log.info("params %s attempt %s", dict(ctx.parameters), ctx.attempt)
    await asyncio.sleep(0.05)

def boom(ctx):
    raise ValueError("bad thing")
'''

JOBS = '''
[jobs.die]
cron = "0 0 3 * * *"
target = "python:isojobs:die"
max_attempts = 1

[jobs.bend]
cron = "0 0 3 * * *"
target = "python:isojobs:bend"

[jobs.spin]
cron = "0 0 3 * * *"
target = "python:isojobs:spin"
timeout = "1s"
kill_timeout = "1s"
max_attempts = 1

[jobs.hello]
cron = "0 0 3 * * *"
target = "python:isojobs:hello"
parameters = { a = 1 }

[jobs.boom]
cron = "0 0 3 * * *"
target = "python:isojobs:boom"
max_attempts = 1

[jobs.cmd]
cron = "0 0 3 * * *"
command = ["sh", "-c", "echo path=$PATH cwd=$(pwd)"]
'''


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _final(project: Project, job: str) -> dict[str, object]:
    done = project.cli("trigger", job, "--wait", "--json", timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    execution = json.loads(done.stdout)["execution"]
    assert isinstance(execution, dict)
    return execution


def test_a_process_isolated_handler_cannot_harm_the_scheduler(tmp_path: Path) -> None:
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "isojobs.py").write_text(HANDLERS)
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=f'python_path = ["{mods}"]\nisolation = "process"\n')
    project.jobs(JOBS)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t, 20), run.text()
        died = _final(project, "die")
        assert (died["status"], died["exit_code"]) == ("dead_letter", 4), died
        assert run.proc.poll() is None  # the scheduler runs on
        assert _final(project, "bend")["status"] == "succeeded"
        cmd = _final(project, "cmd")
        assert cmd["status"] == "succeeded"
        logs = project.cli("logs", str(cmd["id"])).stdout
        assert "/nonexistent" not in logs and f"cwd={tmp_path}" in logs, logs
        spun = _final(project, "spin")
        assert spun["status"] == "dead_letter" and "timed out" in str(spun["error"]), spun
        before = _cpu(run.proc.pid)
        time.sleep(2)
        assert _cpu(run.proc.pid) - before < 0.5  # no spinning thread left behind
        hello = _final(project, "hello")
        assert hello["status"] == "succeeded"
        hello_log = project.cli("logs", str(hello["id"])).stdout
        assert "params {'a': 1} attempt 1" in hello_log
        assert "INFO params" not in hello_log  # issue 39: the level was in the text too
        boom = _final(project, "boom")
        assert (boom["status"], boom["exit_code"]) == ("dead_letter", 1)
        assert boom["error"] == "ValueError: bad thing"  # issue 39: it was "exit code 1"
        assert "ValueError: bad thing" in project.cli("logs", str(boom["id"])).stdout
    finally:
        assert run.stop() == 0, run.text()[-3000:]


@pytest.mark.parametrize("config, jobs, message", [
    ("", '[jobs.c]\ncron = "* * * * *"\ncommand = ["true"]\nisolation = "process"\n',
     "'isolation' only applies to python: and service: targets"),
    ("", '[jobs.p]\ncron = "* * * * *"\ntarget = "python:os:getcwd"\nisolation = "fork"\n',
     "'fork' is not one of: thread, process"),
    ('isolation = "fork"\n', '', "scheduler.isolation"),
])
def test_isolation_is_validated(tmp_path: Path, config: str, jobs: str, message: str) -> None:
    project = Project(tmp_path, "none", extra=config)
    project.jobs(jobs or '[jobs.a]\ncron = "* * * * *"\ncommand = ["true"]\n')
    done = project.cli("validate")
    assert done.returncode == 1 and message in done.stdout + done.stderr, done.stdout
