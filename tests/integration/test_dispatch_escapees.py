"""Processes a command starts outside its process group (``setsid``) end with its
attempt: SIGTERM when it ends (success, timeout), SIGKILL after ``kill_timeout``. Real
processes, no mocks."""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from cronctl.dispatch import escapees
from cronctl.dispatch.command import CommandDispatcher
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import CommandTarget, ExecutionStatus, JobDefinition

KILL_TIMEOUT = 0.3


@pytest.fixture
def dispatcher() -> Iterator[CommandDispatcher]:
    d = CommandDispatcher()
    yield d
    d.shutdown(wait=False)


def escaping(pid_file: Path, *, ignore_term: bool = False, then: str = "exit 0") -> str:
    """A shell line that starts ``sleep 300`` in a session of its own (its pid in
    ``pid_file``), waits until it runs, then does ``then``."""
    trap = "trap '' TERM; " if ignore_term else ""
    return (f"setsid sh -c \"{trap}echo \\$\\$ > {pid_file}.tmp && mv {pid_file}.tmp "
            f"{pid_file}; exec sleep 300\" & "
            f"while [ ! -s {pid_file} ]; do sleep 0.01; done; {then}")


def run(dispatcher: CommandDispatcher, line: str, timeout: float | None = None,
        occurrence_id: str | None = None) -> tuple[RecordingSink, OutcomeRecorder]:
    definition = JobDefinition(
        id="escaper", target=CommandTarget(argv=(line,), shell=True), cron="* * * * * *",
        kill_timeout=timedelta(seconds=KILL_TIMEOUT),
        timeout=None if timeout is None else timedelta(seconds=timeout))
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(definition, occurrence_id=occurrence_id), sink, done)
    if timeout is not None:
        time.sleep(timeout)
        handle.abandon()  # what the runtime does at the timeout
    done.wait(10)
    return sink, done


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.01)
    return False


def test_a_setsid_process_ends_with_a_successful_attempt(dispatcher: CommandDispatcher,
                                                         tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    sink, done = run(dispatcher, escaping(pid_file))
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED
    pid = int(pid_file.read_text())
    assert gone_within(pid, KILL_TIMEOUT), "the setsid sleep outlived its attempt"
    assert (logging.WARNING, "ended 1 process(es) the attempt started outside its process "
            f"group (setsid): pid {pid}") in sink.lines


def test_one_that_ignores_sigterm_gets_sigkill_after_kill_timeout(
        dispatcher: CommandDispatcher, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    _sink, done = run(dispatcher, escaping(pid_file, ignore_term=True))
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED
    pid = int(pid_file.read_text())
    time.sleep(KILL_TIMEOUT / 3)
    assert alive(pid)  # SIGTERM ignored
    assert gone_within(pid, KILL_TIMEOUT + 1.0)


def test_a_timed_out_attempt_takes_them_along(dispatcher: CommandDispatcher,
                                              tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    _sink, done = run(dispatcher, escaping(pid_file, then="sleep 300"), timeout=0.5)
    assert done.outcomes[0].status is ExecutionStatus.FAILED
    assert gone_within(int(pid_file.read_text()), KILL_TIMEOUT)


def test_processes_of_other_attempts_are_left_alone(dispatcher: CommandDispatcher,
                                                    tmp_path: Path) -> None:
    # The same occurrence and attempt (two schedulers on one host run every_instance
    # jobs alike): each attempt still ends only its own.
    first, second = tmp_path / "one", tmp_path / "two"
    long = dispatcher.start(request_for(JobDefinition(
        id="escaper", target=CommandTarget(argv=(escaping(first, then="sleep 300"),),
                                           shell=True),
        cron="* * * * * *", kill_timeout=timedelta(seconds=KILL_TIMEOUT)),
        occurrence_id="occ-same"), RecordingSink(), OutcomeRecorder())
    try:
        deadline = time.monotonic() + 5
        while not first.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        run(dispatcher, escaping(second), occurrence_id="occ-same")
        assert gone_within(int(second.read_text()), KILL_TIMEOUT)
        assert alive(int(first.read_text()))
    finally:
        long.cancel()


def test_find_looks_only_after_the_leader_when_told() -> None:
    tag = escapees.new_tag()
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ, escapees.TAG_ENV: tag})
    try:
        mark = escapees.marker(tag)
        assert escapees.find(mark) == [proc.pid]
        assert escapees.find(mark, proc.pid - 1) == [proc.pid]
        assert escapees.find(mark, proc.pid) == []  # allocated before: not looked at
        assert escapees.find(escapees.marker(escapees.new_tag())) == []
    finally:
        proc.kill()
        proc.wait()


def test_members_of_its_own_group_are_not_reported_as_escaped(
        dispatcher: CommandDispatcher) -> None:
    # A background child in the group ends by the group's SIGKILL, never as an escapee.
    for _ in range(5):
        sink, done = run(dispatcher, "sleep 30 & sleep 30 & exit 0")
        assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED
        assert not [m for _, m in sink.lines if "outside its process group" in m]


OCCURRENCE = "backup@1796416935"


def stray(execution_id: int, tag: str | None = None) -> subprocess.Popen[bytes]:
    """A ``setsid`` process left by attempt 1 of OCCURRENCE (row ``execution_id``)."""
    env = {**os.environ, "CRONCTL_OCCURRENCE_ID": OCCURRENCE, "CRONCTL_ATTEMPT": "1",
           "CRONCTL_EXECUTION_ID": str(execution_id)}
    if tag is not None:
        env[escapees.TAG_ENV] = tag
    return subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)


@contextmanager
def strays(*procs: subprocess.Popen[bytes]) -> Iterator[None]:
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_recovery_ends_only_the_interrupted_attempts_own_escapees() -> None:
    """A second scheduler on the host with a database of its own runs a job of the same
    name at the same instant: its attempt carries the same occurrence id and attempt
    number. Recovering the first one's interrupted attempt must not kill it (the chaos
    run saw a live attempt SIGKILLed by the other cluster's recovery)."""
    ours, theirs = stray(956), stray(957)
    with strays(ours, theirs):
        assert escapees.end_left_behind(OCCURRENCE, 1, 956, None) == [ours.pid]
        assert ours.wait(5) == -9
        assert theirs.poll() is None
        assert escapees.end_left_behind(OCCURRENCE, 2, 957, None) == []
        assert theirs.poll() is None


def test_recovery_leaves_alone_an_attempt_tagged_for_another_database() -> None:
    """Two schedulers on one host, each with its own database and the same jobs, started
    together: their rows may match in occurrence, attempt AND execution id. The tag's
    scope (a digest of the database) tells them apart."""
    ours_scope = escapees.scope_of("sqlite:2049:1001")
    ours = stray(956, escapees.new_tag(ours_scope))
    theirs = stray(956, escapees.new_tag(escapees.scope_of("sqlite:2049:1002")))
    with strays(ours, theirs):
        killed = escapees.end_left_behind(OCCURRENCE, 1, 956, None, ours_scope)
        assert killed == [ours.pid]
        assert ours.wait(5) == -9
        assert theirs.poll() is None


def test_a_dispatchers_scope_prefixes_its_attempts_tags(tmp_path: Path) -> None:
    scoped = CommandDispatcher(scope="0123456789abcdef")
    try:
        out = tmp_path / "env"
        job = JobDefinition(id="tagged", target=CommandTarget(
            argv=(f'tr "\\000" "\\n" < /proc/$$/environ > {out}',), shell=True))
        recorder = OutcomeRecorder()
        scoped.start(request_for(job, execution_id=7), RecordingSink(), recorder)
        assert recorder.wait(10).status is ExecutionStatus.SUCCEEDED
        tags = [line for line in out.read_text().splitlines()
                if line.startswith(f"{escapees.TAG_ENV}=")]
        assert len(tags) == 1 and tags[0].startswith(f"{escapees.TAG_ENV}=0123456789abcdef-")
        assert os.environ.get(escapees.TAG_ENV) is None
    finally:
        scoped.shutdown(wait=False)
