"""No command outlives the process that started it (SPEC section 4, "No attempt outlives
its scheduler"): the group leader gets SIGKILL from the kernel when its parent dies, and
the dispatcher reports each child's process group and identity as it starts."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path

from cronctl import processes
from cronctl.dispatch.command import CommandDispatcher
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import CommandTarget, JobDefinition

PARENT = textwrap.dedent('''
    import sys, threading, time
    from cronctl.dispatch.command import CommandDispatcher
    from cronctl.dispatch.testing import RecordingSink, request_for
    from cronctl.jobs.model import CommandTarget, JobDefinition
    import dataclasses
    job = JobDefinition(id="j", target=CommandTarget(argv=("sleep", "60")),
                        cron="* * * * * *")
    spawned = threading.Event()
    def on_spawn(pid, ident):
        print(pid, ident, flush=True)
        spawned.set()
    request = dataclasses.replace(request_for(job), on_spawn=on_spawn)
    CommandDispatcher().start(request, RecordingSink(), lambda outcome: None)
    spawned.wait(10)
    time.sleep(120)
''')


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        fields = _state(pid)
        if fields is None or fields in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_the_command_dies_with_the_process_that_started_it() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE,
                              text=True)
    assert parent.stdout is not None
    pid_text, ident = parent.stdout.readline().split()
    pid = int(pid_text)
    try:
        assert processes.alive(pid, ident) is True
        assert os.getpgid(pid) == pid  # its own process group, recorded by its leader's pid
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)
        assert _gone(pid, 2.0), "the command outlived its parent"
    finally:
        if _state(pid) not in (None, "Z", "X"):
            os.kill(pid, signal.SIGKILL)
        parent.stdout.close()


def test_on_spawn_reports_the_group_and_identity_once() -> None:
    job = JobDefinition(id="j", target=CommandTarget(argv=("sleep", "0.2")),
                        cron="* * * * * *", kill_timeout=timedelta(seconds=1))
    seen: list[tuple[int, str | None, str]] = []
    lock = threading.Lock()

    def on_spawn(pgid: int, ident: str | None) -> None:
        with lock:
            seen.append((pgid, ident, threading.current_thread().name))

    dispatcher = CommandDispatcher()
    try:
        done = OutcomeRecorder()
        dispatcher.start(dataclasses.replace(request_for(job), on_spawn=on_spawn),
                         RecordingSink(), done)
        assert done.wait(10).status.value == "succeeded"
    finally:
        dispatcher.shutdown(wait=False)
    [(pgid, ident, thread)] = seen
    assert ident is not None and ident.startswith(f"{processes.boot_id()}:")
    assert thread == "cronctl-commands"  # the reactor: the thread every child outlives
    assert processes.alive(pgid, ident) is False  # it ended
