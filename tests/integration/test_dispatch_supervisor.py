"""The command supervisor against real process groups: it ends them when the beats stop
for its limit or when the scheduler's end of the pipe closes, and never a group it was
told had ended."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from test_run_support import pid_alive

from cronctl.dispatch.supervisor import Supervisor


def group() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def gone(proc: subprocess.Popen[bytes], within: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < within:
        if proc.poll() is not None:
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def test_beats_keep_groups_alive_and_silence_ends_them() -> None:
    sup = Supervisor(0.6)
    kept, ended = group(), group()
    try:
        sup.started(kept.pid)
        sup.started(ended.pid)
        for _ in range(10):  # 1 s of beats, more than the limit in all
            sup.beat()
            time.sleep(0.1)
        assert kept.poll() is None and ended.poll() is None
        sup.ending(kept.pid)  # its leader is about to be reaped: forgotten
        waited = gone(ended, 3.0)
        assert waited is not None and waited < 1.5
        assert ended.returncode == -9
        assert kept.poll() is None and pid_alive(kept.pid)
    finally:
        sup.close()
        for p in (kept, ended):
            if p.poll() is None:
                p.kill()
            p.wait(5)


def test_the_scheduler_gone_ends_what_is_left() -> None:
    sup = Supervisor(60.0)
    proc = group()
    try:
        sup.started(proc.pid)
        sup.beat()
        sup.close()  # (as when the scheduler exits: the pipe closes)
        assert gone(proc, 3.0) is not None
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


def test_a_command_the_supervisor_ended_says_so() -> None:
    from datetime import timedelta

    from cronctl.dispatch.command import CommandDispatcher
    from cronctl.dispatch.testing import OutcomeRecorder, RecordingSink, request_for
    from cronctl.jobs.model import CommandTarget, ExecutionStatus, JobDefinition

    dispatcher = CommandDispatcher()
    dispatcher.supervise(0.5)
    try:
        job = JobDefinition(id="long", target=CommandTarget(("sleep", "60")),
                            cron="* * * * * *", kill_timeout=timedelta(seconds=1))
        done = OutcomeRecorder()
        dispatcher.start(request_for(job), RecordingSink(), done)  # no beat comes
        outcome = done.wait(10)
    finally:
        dispatcher.shutdown(wait=False)
    assert outcome.status is ExecutionStatus.FAILED
    assert outcome.error == ("killed by SIGKILL from the supervisor: this scheduler had no "
                             "heartbeat accepted for more than 0.5s")


def test_a_supervisor_frozen_past_its_limit_ends_groups_despite_late_beats() -> None:
    """The whole node frozen (a paused VM): beats sent as it wakes come too late, the
    lease may have been taken over meanwhile (the tree-frozen nemesis of tests/chaos)."""
    sup = Supervisor(0.5)
    proc = group()
    try:
        sup.started(proc.pid)
        sup.beat()
        time.sleep(0.2)
        assert sup.pid is not None
        os.kill(sup.pid, signal.SIGSTOP)
        time.sleep(1.0)
        sup.beat()  # waits in the pipe: the scheduler woke first
        os.kill(sup.pid, signal.SIGCONT)
        for _ in range(10):  # and goes on beating
            time.sleep(0.1)
            sup.beat()
        assert proc.poll() == -9
    finally:
        if sup.pid is not None:
            os.kill(sup.pid, signal.SIGCONT)
        sup.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


def test_a_beat_under_way_brings_the_short_limit_counted_from_its_send() -> None:
    """The lease limit (60 s here) holds only while the last beat confirmed the lock and
    none is under way; a beat that does not land (a frozen path) ends the groups at the
    short limit, counted from when the last accepted beat was sent (docs/liveness.md)."""
    sup = Supervisor(60.0, doubt=0.8)
    kept, ended = group(), group()
    try:
        sup.started(ended.pid)
        time.sleep(0.5)  # (the supervisor counts from its own start at first)
        sup.beat(time.monotonic() - 0.3)  # sent 0.3 s ago, accepted now
        sup.beating()  # ... and the next one never lands
        waited = gone(ended, 3.0)
        assert waited is not None and 0.3 < waited < 0.8, waited
        sup.started(kept.pid)  # a frozen scheduler: no beat under way, the long limit
        sup.beat()
        assert gone(kept, 1.5) is None
    finally:
        sup.close()
        for p in (kept, ended):
            if p.poll() is None:
                p.kill()
            p.wait(5)


def test_a_beat_stamped_without_the_lock_or_failed_keeps_the_short_limit() -> None:
    sup = Supervisor(60.0, doubt=0.6, restart=1.6)
    stamped, failed, restarted = group(), group(), group()
    try:
        sup.started(stamped.pid)
        sup.beat(locked=False)  # accepted, but the lock is another session's
        assert (waited := gone(stamped, 3.0)) is not None and waited < 1.0, waited
        sup.started(failed.pid)
        sup.beat()
        sup.beating()
        sup.failed()
        assert (waited := gone(failed, 3.0)) is not None and waited < 1.0, waited
        sup.started(restarted.pid)
        sup.beat()
        sup.beating()
        sup.failed(restart=True)  # proof of a server restart: the longer limit
        assert gone(restarted, 1.0) is None
        assert gone(restarted, 2.0) is not None
    finally:
        sup.close()
        for p in (stamped, failed, restarted):
            if p.poll() is None:
                p.kill()
            p.wait(5)
