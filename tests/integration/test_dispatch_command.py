"""CommandDispatcher against real child processes (no mocks): environment, argv without a
shell, output to the sink, truncation, exit codes, cancel/timeout kill sequences, process
groups, spawn failures. Every wait is on an event with a timeout."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronctl.dispatch.command import CommandDispatcher
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import CommandTarget, ExecutionStatus, JobDefinition, Origin

PY = sys.executable


def job(*argv: str, shell: bool = False, env: dict[str, str] | None = None,
        cwd: str | None = None, timeout: float | None = None,
        params: dict[str, object] | None = None) -> JobDefinition:
    return JobDefinition(
        id="cmd-job",
        target=CommandTarget(argv=tuple(argv), shell=shell, env=env or {}, cwd=cwd),
        cron="* * * * * *",
        kill_timeout=timedelta(seconds=0.2),
        timeout=None if timeout is None else timedelta(seconds=timeout),
        parameters=params or {},
    )


@pytest.fixture
def dispatcher() -> Iterator[CommandDispatcher]:
    d = CommandDispatcher()
    yield d
    d.shutdown(wait=False)


def run(dispatcher: CommandDispatcher, definition: JobDefinition,
        **kw: object) -> tuple[RecordingSink, OutcomeRecorder]:
    sink, done = RecordingSink(), OutcomeRecorder()
    dispatcher.start(request_for(definition, **kw), sink, done)  # type: ignore[arg-type]
    done.wait(10)
    return sink, done


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(predicate: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


def test_environment_has_cronctl_variables(dispatcher: CommandDispatcher) -> None:
    scheduled = datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    definition = job(PY, "-c", "import os, json; print(json.dumps(dict(os.environ)))",
                     env={"EXTRA": "yes"}, params={"days": 30})
    sink, done = run(dispatcher, definition, execution_id=42, scheduled_at=scheduled,
                     attempt=2, fencing_token=7, occurrence_id="occ-x", origin=Origin.MANUAL)
    assert done.outcomes == [done.outcomes[0]]
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED
    env = json.loads(sink.messages[0])
    assert env["CRONCTL_JOB_ID"] == "cmd-job"
    assert env["CRONCTL_EXECUTION_ID"] == "42"
    assert env["CRONCTL_OCCURRENCE_ID"] == "occ-x"
    assert env["CRONCTL_SCHEDULED_AT"] == "2026-03-08T07:00:00Z"
    assert env["CRONCTL_ATTEMPT"] == "2"
    assert env["CRONCTL_FENCING_TOKEN"] == "7"
    assert json.loads(env["CRONCTL_PARAMETERS"]) == {"days": 30}
    assert env["EXTRA"] == "yes"
    assert env["PATH"] == os.environ["PATH"]  # the scheduler's environment is inherited


def test_argv_is_not_given_to_a_shell(dispatcher: CommandDispatcher, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    sink, done = run(dispatcher, job("echo", f"a; touch {marker}", "$HOME"))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    assert sink.messages == [f"a; touch {marker} $HOME"]
    assert not marker.exists()


def test_shell_true_runs_through_sh(dispatcher: CommandDispatcher, tmp_path: Path) -> None:
    sink, done = run(dispatcher, job("echo one; echo two | tr a-z A-Z", shell=True,
                                     cwd=str(tmp_path)))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    assert sink.messages == ["one", "TWO"]


def test_stdout_is_info_and_stderr_is_warning(dispatcher: CommandDispatcher) -> None:
    sink, done = run(dispatcher, job("sh", "-c", "echo out; echo err >&2; printf tail"))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    assert sorted(sink.lines) == sorted([(20, "out"), (30, "err"), (20, "tail")])


def test_many_lines_keep_the_first_and_the_last_half(dispatcher: CommandDispatcher) -> None:
    # Far more than the pipe buffer and than [retention] max_log_lines (10,000 here):
    # the first 5,000 lines, one line counting the middle, the last 5,000.
    code = "import sys\nfor i in range(15000): sys.stdout.write(f'line {i}\\n')"
    sink, done = run(dispatcher, job(PY, "-c", code))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    dropped = sum(len(f"line {i}\n") for i in range(5000, 10000))
    assert sink.messages == ([f"line {i}" for i in range(5000)]
                             + [f"… 5000 lines ({dropped} bytes) dropped …"]
                             + [f"line {i}" for i in range(10000, 15000)])
    assert sink.lines[5000][0] == logging.WARNING


def test_output_limit_keeps_half_a_mib_at_each_end(dispatcher: CommandDispatcher) -> None:
    # 40 lines of 60,000 bytes, then 200,000 bytes without a newline (split into 64 KiB
    # pieces): 8 lines fit in the first half of 1 MiB, the pieces and 5 lines in the last.
    code = ("import sys\nfor i in range(40): sys.stdout.write(f'{i:02d}' + 'x' * 59998 + "
            "'\\n')\nsys.stdout.write('y' * 200000)")
    sink, done = run(dispatcher, job(PY, "-c", code))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    kept = sink.messages
    assert [m[:2] for m in kept[:8]] == [f"{i:02d}" for i in range(8)]
    assert kept[8] == f"… 27 lines ({27 * 60001} bytes) dropped …"
    assert [m[:2] for m in kept[9:14]] == [f"{i:02d}" for i in range(35, 40)]
    assert [len(m) for m in kept[14:]] == [65536, 65536, 65536, 200000 - 3 * 65536]
    assert set("".join(kept[14:])) == {"y"}


def test_a_smaller_output_limit(dispatcher: CommandDispatcher) -> None:
    code = "for i in range(1000): print(f'{i:04d}')"  # 5 bytes a line
    sink, done = run(dispatcher, replace(job(PY, "-c", code), output_limit=1024))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    head, tail = sink.messages[:102], sink.messages[103:]
    assert head == [f"{i:04d}" for i in range(102)]  # 102 * 5 <= 512 bytes
    assert sink.messages[102] == f"… {1000 - 204} lines ({(1000 - 204) * 5} bytes) dropped …"
    assert tail == [f"{i:04d}" for i in range(898, 1000)]


@pytest.mark.parametrize(("script", "error", "code"), [
    ("exit 0", None, 0),
    ("exit 3", "exit code 3", 3),
    ("kill -9 $$", "killed by SIGKILL (out of memory?)", -9),  # not sent by cronctl
    ("kill -TERM $$", "killed by SIGTERM", -15),
])
def test_exit_codes(dispatcher: CommandDispatcher, script: str, error: str | None,
                    code: int) -> None:
    _, done = run(dispatcher, job("sh", "-c", script))
    outcome = done.wait()
    expected = ExecutionStatus.SUCCEEDED if code == 0 else ExecutionStatus.FAILED
    assert (outcome.status, outcome.error, outcome.exit_code) == (expected, error, code)
    assert outcome.retryable


TRAPS_TERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: print("got TERM", flush=True))
print("ready", flush=True)
while True:
    time.sleep(0.01)
"""


def test_cancel_sends_term_then_kill_after_kill_timeout(dispatcher: CommandDispatcher) -> None:
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(job(PY, "-c", TRAPS_TERM)), sink, done)
    assert sink.wait_for("ready")
    cancelled_at = time.monotonic()
    handle.cancel()
    outcome = done.wait()
    elapsed = time.monotonic() - cancelled_at
    assert outcome.status is ExecutionStatus.CANCELLED
    assert outcome.error == "cancelled; killed with SIGKILL after 0.2s"
    assert outcome.exit_code == -signal.SIGKILL
    assert "got TERM" in sink.messages
    assert 0.2 <= elapsed < 3.0
    assert len(done.outcomes) == 1


def test_cancel_of_a_process_that_exits_on_term(dispatcher: CommandDispatcher) -> None:
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(job("sh", "-c", "echo ready; sleep 30")), sink, done)
    assert sink.wait_for("ready")
    handle.cancel()
    handle.cancel()  # twice is harmless
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.CANCELLED
    assert outcome.error == "cancelled; killed by SIGTERM"
    assert len(done.outcomes) == 1


def test_timeout_kills_and_fails(dispatcher: CommandDispatcher) -> None:
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(job(PY, "-c", TRAPS_TERM, timeout=0.5)), sink, done)
    assert sink.wait_for("ready")
    handle.abandon()
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error == "timed out after 0.5s; killed"


def test_cancel_kills_the_whole_process_group(dispatcher: CommandDispatcher) -> None:
    sink, done = RecordingSink(), OutcomeRecorder()
    script = "sleep 30 & echo $!; echo ready; wait"
    handle = dispatcher.start(request_for(job("sh", "-c", script)), sink, done)
    assert sink.wait_for("ready")
    grandchild = int(sink.messages[0])
    assert alive(grandchild)
    handle.cancel()
    assert done.wait().status is ExecutionStatus.CANCELLED
    assert wait_until(lambda: not alive(grandchild))


def test_background_leftovers_are_killed_when_the_command_exits(
    dispatcher: CommandDispatcher,
) -> None:
    sink, done = run(dispatcher, job("sh", "-c", "sleep 30 & echo $!"))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    grandchild = int(sink.messages[0])
    assert wait_until(lambda: not alive(grandchild))


def test_command_runs_in_its_own_process_group(dispatcher: CommandDispatcher) -> None:
    sink, done = run(dispatcher, job(PY, "-c", "import os; print(os.getpgid(0), os.getpid())"))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    pgid, pid = map(int, sink.messages[0].split())
    assert pgid == pid != os.getpgid(0)


def test_command_not_found_is_a_failed_outcome(dispatcher: CommandDispatcher) -> None:
    _, done = run(dispatcher, job("definitely-not-a-command-xyz", "arg"))
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error == "command not found: definitely-not-a-command-xyz"
    assert outcome.retryable is False  # issue 24: a retry cannot find it either


def test_permission_denied_is_a_failed_outcome(dispatcher: CommandDispatcher,
                                               tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    if os.geteuid() == 0 and os.access(script, os.X_OK):  # pragma: no cover
        pytest.skip("root can execute anything here")
    _, done = run(dispatcher, job(str(script)))
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error == f"permission denied: {script}"
    assert outcome.retryable is False


def test_missing_working_directory(dispatcher: CommandDispatcher, tmp_path: Path) -> None:
    _, done = run(dispatcher, job("true", cwd=str(tmp_path / "nope")))
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error == f"working directory not found: {tmp_path / 'nope'}"
    assert outcome.retryable is True  # a mount may come back


def test_many_children_share_one_reader_thread(dispatcher: CommandDispatcher) -> None:
    recorders = []
    for i in range(20):
        sink, done = RecordingSink(), OutcomeRecorder()
        dispatcher.start(request_for(job("sh", "-c", f"echo {i}")), sink, done)
        recorders.append((i, sink, done))
    for i, sink, done in recorders:
        assert done.wait().status is ExecutionStatus.SUCCEEDED
        assert sink.messages == [str(i)]
    readers = [t for t in threading.enumerate() if t.name == "cronctl-commands"]
    assert len(readers) == 1


def test_shutdown_without_wait_kills_running_commands() -> None:
    dispatcher = CommandDispatcher()
    sink, done = RecordingSink(), OutcomeRecorder()
    dispatcher.start(request_for(job(PY, "-c", TRAPS_TERM)), sink, done)
    assert sink.wait_for("ready")
    dispatcher.shutdown(wait=False)
    outcome = done.wait()
    assert outcome.status is ExecutionStatus.CANCELLED
    assert outcome.error == "killed at scheduler shutdown"


def test_children_are_reaped(dispatcher: CommandDispatcher) -> None:
    sink, done = run(dispatcher, job(PY, "-c", "import os; print(os.getpid())"))
    assert done.wait().status is ExecutionStatus.SUCCEEDED
    pid = int(sink.messages[0])
    assert not Path(f"/proc/{pid}").exists()  # not even a zombie


def test_interceptors_see_commands_too() -> None:
    from cronctl.context import JobContext
    from cronctl.dispatch.base import Outcome
    from cronctl.dispatch.interceptors import Interceptors

    events: list[tuple[str, object]] = []

    class Recorder:
        def on_dispatch(self, ctx: JobContext) -> None:
            events.append(("dispatch", ctx.execution_id))

        def on_complete(self, ctx: JobContext, outcome: Outcome) -> None:
            events.append(("complete", outcome.status))

    dispatcher = CommandDispatcher(interceptors=Interceptors([Recorder()]))
    try:
        _, done = run(dispatcher, job("true"), execution_id=5)
        assert done.wait().status is ExecutionStatus.SUCCEEDED
        _, done = run(dispatcher, job("no-such-command-abc"), execution_id=6)
        assert done.wait().status is ExecutionStatus.FAILED
    finally:
        dispatcher.shutdown()
    assert events == [("dispatch", 5), ("complete", ExecutionStatus.SUCCEEDED),
                      ("dispatch", 6), ("complete", ExecutionStatus.FAILED)]


def test_a_kill_timeout_longer_than_the_selector_can_wait(dispatcher: CommandDispatcher) -> None:
    """epoll cannot wait more than ~24.8 days (INT_MAX ms): a long kill_timeout (durations
    may be up to 100 years) must not kill the reactor thread."""
    patient = replace(job(PY, "-c", TRAPS_TERM), kill_timeout=timedelta(days=30))
    sink, done = RecordingSink(), OutcomeRecorder()
    handle = dispatcher.start(request_for(patient), sink, done)
    assert sink.wait_for("ready")
    handle.cancel()
    assert sink.wait_for("got TERM")
    _, quick = run(dispatcher, job("true"))  # the reactor still spawns and reaps
    assert quick.outcomes and quick.outcomes[0].status is ExecutionStatus.SUCCEEDED
    assert not done.outcomes  # still within its 30 days of grace
