"""The job's sandbox against real child processes (SPEC section 9): ``user``/``group``
with real users made by ``useradd`` (root only; otherwise skipped with a reason), each
``limits`` key biting, and the figures ``wait4`` gives for every finished child."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cronctl.dispatch.command import CommandDispatcher
from cronctl.dispatch.sandbox import SandboxError, switch_for
from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
from cronctl.jobs.model import CommandTarget, ExecutionStatus, JobDefinition, Limits

PY = sys.executable
# What a created user can execute (this interpreter may live under root's home).
USER_PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="switching users needs root (CI runs as root)")


def job(*argv: str, user: str | None = None, group: str | None = None,
        limits: Limits | None = None, cwd: str | None = None) -> JobDefinition:
    return JobDefinition(
        id="sandboxed",
        target=CommandTarget(argv=tuple(argv), user=user, group=group,
                             limits=limits or Limits(), cwd=cwd),
        cron="* * * * * *",
        kill_timeout=timedelta(seconds=0.5),
    )


@pytest.fixture
def dispatcher() -> Iterator[CommandDispatcher]:
    d = CommandDispatcher()
    yield d
    d.shutdown(wait=False)


def run(dispatcher: CommandDispatcher, definition: JobDefinition,
        timeout: float = 30) -> tuple[RecordingSink, OutcomeRecorder]:
    sink, done = RecordingSink(), OutcomeRecorder()
    dispatcher.start(request_for(definition), sink, done)  # type: ignore[arg-type]
    done.wait(timeout)
    return sink, done


@pytest.fixture
def account() -> Iterator[str]:
    """A real user (and its own group) made for this test, plus a supplementary group."""
    if not ROOT:
        pytest.skip("creating users needs root (CI runs as root)")
    name = f"cct{uuid.uuid4().hex[:10]}"
    extra = f"{name}x"
    subprocess.run(["groupadd", extra], check=True)
    subprocess.run(["useradd", "--no-create-home", "--home-dir", f"/nonexistent/{name}",
                    "--shell", "/bin/sh", "--user-group", "--groups", extra, name],
                   check=True)
    try:
        yield name
    finally:
        # userdel refuses while a process of the user lives (the fork test leaves some)
        deadline = time.monotonic() + 10
        while subprocess.run(["pkill", "-KILL", "-u", name], check=False).returncode == 0:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        removed = subprocess.run(["userdel", name], check=False, capture_output=True)
        subprocess.run(["groupdel", extra], check=False)
        assert removed.returncode == 0, removed.stderr


ID_SCRIPT = ("import os, json; print(json.dumps([os.getuid(), os.geteuid(), os.getgid(), "
             "sorted(os.getgroups()), os.environ.get('HOME'), os.environ.get('USER'), "
             "os.environ.get('LOGNAME'), os.environ.get('SHELL')]))")


@needs_root
def test_user_runs_with_its_uid_gid_groups_and_account_env(
        dispatcher: CommandDispatcher, account: str, tmp_path: Path) -> None:
    entry = pwd.getpwnam(account)
    sink, done = run(dispatcher, job(USER_PY, "-c", ID_SCRIPT, user=account, cwd="/"))
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED, sink.messages
    import json

    uid, euid, gid, groups, home, user, logname, shell = json.loads(sink.messages[0])
    assert (uid, euid, gid) == (entry.pw_uid, entry.pw_uid, entry.pw_gid)
    assert sorted(groups) == sorted({entry.pw_gid, grp.getgrnam(f"{account}x").gr_gid})
    assert (home, user, logname, shell) == (f"/nonexistent/{account}", account, account,
                                            "/bin/sh")


@needs_root
def test_group_overrides_the_primary_group(dispatcher: CommandDispatcher,
                                           account: str) -> None:
    extra = grp.getgrnam(f"{account}x").gr_gid
    sink, done = run(dispatcher, job(USER_PY, "-c", "import os; print(os.getgid(), os.getegid())",
                                     user=account, group=f"{account}x", cwd="/"))
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED, sink.messages
    assert sink.messages == [f"{extra} {extra}"]


def test_unknown_user_at_run_time_fails_the_attempt_with_one_line(
        dispatcher: CommandDispatcher, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    sink, done = run(dispatcher, job("touch", str(marker), user="no-such-user-cronctl"))
    outcome = done.outcomes[0]
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error == "cannot run as user 'no-such-user-cronctl': no such user"
    assert not marker.exists()  # never ran as the scheduler's user instead


def test_unknown_group_fails_the_attempt(dispatcher: CommandDispatcher) -> None:
    _, done = run(dispatcher, job("true", group="no-such-group-cronctl"))
    assert done.outcomes[0].status is ExecutionStatus.FAILED
    assert done.outcomes[0].error == "cannot run as group 'no-such-group-cronctl': no such group"


def test_a_scheduler_that_is_not_root_cannot_switch() -> None:
    target = CommandTarget(argv=("true",), user="root")
    with pytest.raises(SandboxError, match=r"cannot run as user 'root': the scheduler is "
                                           r"not root \(it runs as uid 1000\)"):
        switch_for(target, euid=1000, egid=1000)
    # its own user is no switch at all
    me = pwd.getpwnam("nobody")
    own = switch_for(CommandTarget(argv=("true",), user="nobody"), euid=me.pw_uid,
                     egid=me.pw_gid)
    assert own is not None and own.uid is None and own.groups is None
    assert own.env["USER"] == "nobody"


# --- limits -------------------------------------------------------------------------------


def test_memory_limit_makes_a_large_allocation_fail(dispatcher: CommandDispatcher) -> None:
    script = "b = bytearray(400 * 1024 * 1024); print('allocated')"
    sink, done = run(dispatcher, job(PY, "-c", script, limits=Limits(memory=200 * 1024**2)))
    outcome = done.outcomes[0]
    assert outcome.status is ExecutionStatus.FAILED
    assert "allocated" not in sink.messages
    assert any("MemoryError" in m for m in sink.messages)
    # and without the limit the same allocation works
    sink, done = run(dispatcher, job(PY, "-c", script))
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED


def test_cpu_time_limit_ends_a_busy_loop(dispatcher: CommandDispatcher) -> None:
    _, done = run(dispatcher, job(PY, "-c", "while True: pass", limits=Limits(cpu_time=1)))
    outcome = done.outcomes[0]
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.usage is not None and outcome.usage.signal in ("SIGXCPU", "SIGKILL")
    assert outcome.error == f"killed by {outcome.usage.signal}"
    assert 0.9 <= (outcome.usage.cpu_seconds or 0) < 5


def test_open_files_limit(dispatcher: CommandDispatcher) -> None:
    script = ("import sys\nfiles = []\ntry:\n    for _ in range(64): files.append(open("
              "'/dev/null'))\nexcept OSError as e:\n    print(e.errno); sys.exit(3)\n")
    sink, done = run(dispatcher, job(PY, "-c", script, limits=Limits(open_files=16)))
    assert done.outcomes[0].exit_code == 3
    assert sink.messages == ["24"]  # EMFILE
    _, done = run(dispatcher, job(PY, "-c", script))
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED


def test_file_size_limit(dispatcher: CommandDispatcher, tmp_path: Path) -> None:
    out = tmp_path / "big"
    script = f"exec head -c 2097152 /dev/zero > '{out}'"  # (Python would ignore SIGXFSZ)
    _, done = run(dispatcher, job("/bin/sh", "-c", script, limits=Limits(file_size=1024**2)))
    outcome = done.outcomes[0]
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.usage is not None and outcome.usage.signal == "SIGXFSZ"
    assert out.stat().st_size <= 1024 * 1024


FORKS = ("import os, sys, time\nfor i in range(20):\n    try:\n        pid = os.fork()\n"
         "    except OSError:\n        print('fork refused at', i); sys.exit(4)\n"
         "    if pid == 0:\n        time.sleep(10); os._exit(0)\nprint('forked 20')\n")


@needs_root
def test_processes_limit_as_a_created_user(dispatcher: CommandDispatcher, account: str) -> None:
    # root ignores RLIMIT_NPROC: the job runs as a fresh user, who has no processes yet
    sink, done = run(dispatcher, job(USER_PY, "-c", FORKS, user=account, cwd="/",
                                     limits=Limits(processes=5)))
    assert done.outcomes[0].exit_code == 4, sink.messages
    assert sink.messages[0].startswith("fork refused at ")
    assert int(sink.messages[0].split()[-1]) < 5
    sink, done = run(dispatcher, job(USER_PY, "-c", FORKS, user=account, cwd="/"))
    assert sink.messages == ["forked 20"]


# --- figures -----------------------------------------------------------------------------


def test_figures_of_a_finished_child(dispatcher: CommandDispatcher) -> None:
    script = ("import time\nb = bytearray(64 * 1024 * 1024)\nfor i in range(0, len(b), 4096): "
              "b[i] = 1\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
              "raise SystemExit(7)")
    _, done = run(dispatcher, job(PY, "-c", script))
    usage = done.outcomes[0].usage
    assert usage is not None
    assert usage.exit_code == 7 and usage.signal is None
    assert 0.3 <= (usage.cpu_seconds or 0) < 5
    assert (usage.max_rss_bytes or 0) >= 64 * 1024 * 1024


def test_descendants_cpu_is_counted(dispatcher: CommandDispatcher) -> None:
    inner = "t=__import__('time'); s=t.process_time()\\nwhile t.process_time()-s<0.3: pass"
    script = f"import subprocess, sys; subprocess.run([sys.executable, '-c', \"{inner}\"])"
    _, done = run(dispatcher, job(PY, "-c", script))
    usage = done.outcomes[0].usage
    assert done.outcomes[0].status is ExecutionStatus.SUCCEEDED
    assert usage is not None and (usage.cpu_seconds or 0) >= 0.3


def test_a_sigkill_the_scheduler_did_not_send(dispatcher: CommandDispatcher) -> None:
    _, done = run(dispatcher, job(PY, "-c", "import os, signal; os.kill(os.getpid(), "
                                            "signal.SIGKILL)"))
    outcome = done.outcomes[0]
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error == "killed by SIGKILL (out of memory?)"
    assert outcome.usage is not None and outcome.usage.signal == "SIGKILL"
    assert outcome.usage.exit_code is None
