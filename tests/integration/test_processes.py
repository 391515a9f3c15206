"""Process identities (cronctl.processes) against real processes: a pid with its start
time names one process; a reused pid, a zombie or an identity of another boot never
passes for it; a process group is found by its leader's identity after the leader died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from cronctl import processes


def test_identity_names_this_process_and_no_other() -> None:
    me = processes.identity(os.getpid())
    assert me is not None and processes.on_this_boot(me)
    boot, ticks = me.rsplit(":", 1)
    assert boot == processes.boot_id()
    assert processes.alive(os.getpid(), me) is True
    assert processes.alive(os.getpid(), f"{boot}:{int(ticks) + 1}") is False  # pid reused
    assert processes.alive(os.getpid(), f"another-boot:{ticks}") is None  # cannot tell
    assert processes.alive(os.getpid(), None) is None
    assert processes.alive(os.getpid(), "garbage") is None


def test_an_exited_process_is_gone_even_as_a_zombie() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    ident = processes.identity(child.pid)
    deadline = time.monotonic() + 5
    while processes.alive(child.pid, ident) and time.monotonic() < deadline:
        time.sleep(0.01)  # exited, not reaped yet: a zombie
    assert processes.alive(child.pid, ident) is False
    child.wait()
    assert processes.alive(child.pid, ident) is False
    assert processes.identity(child.pid) is None


def test_a_group_outlives_its_leader_until_its_last_member() -> None:
    leader = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; exit 0"], text=True,
                              stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout is not None
    ident = processes.identity(leader.pid)
    member = int(leader.stdout.readline())
    leader.wait(5)
    leader.stdout.close()
    try:
        assert processes.alive(leader.pid, ident) is False
        assert processes.group_members(leader.pid, ident) == [member]
        assert processes.group_members(leader.pid, "another-boot:1") is None
    finally:
        os.kill(member, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while processes.group_members(leader.pid, ident) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert processes.group_members(leader.pid, ident) == []
