"""A ``cronctl trigger`` on this host wakes the scheduler's trigger poll at once
(:mod:`cronctl.wake`, :class:`cronctl.runtime.polls.TriggerWake`), and only the nodes on
this host are told. The socket names here use a negative "pid", which no process has."""

from __future__ import annotations

import os
import socket
import threading
from datetime import UTC, datetime

import pytest

from cronctl import wake
from cronctl.runtime.polls import TriggerWake
from cronctl.store.records import NodeRecord
from cronctl.views.actions import wake_local

pytestmark = pytest.mark.skipif(not wake.supported(), reason="Linux abstract sockets only")

T = datetime(2026, 3, 8, tzinfo=UTC)


def _fake_pid(n: int = 0) -> int:
    return -(os.getpid() * 10 + n)


def _node(pid: int, host: str) -> NodeRecord:
    return NodeRecord(f"node{pid}", host, pid, T, T)


def test_a_wake_calls_take_and_stop_ends_the_thread() -> None:
    taken = threading.Event()
    listener = TriggerWake.start(_fake_pid(), taken.set)
    assert listener is not None
    try:
        wake.wake([_fake_pid()])
        assert taken.wait(10)
    finally:
        listener.stop()
    assert not listener._thread.is_alive()
    wake.wake([_fake_pid()])  # nobody listens any more: silently nothing


def test_a_name_taken_means_no_listener() -> None:
    first = TriggerWake.start(_fake_pid(1), lambda: None)
    assert first is not None
    try:
        assert TriggerWake.start(_fake_pid(1), lambda: None) is None  # polls only
    finally:
        first.stop()


def test_only_the_nodes_on_this_host_are_woken() -> None:
    here, there = _fake_pid(2), _fake_pid(3)
    socks = [wake.listen(pid) for pid in (here, there)]
    assert all(s is not None for s in socks)
    try:
        wake_local([_node(here, socket.gethostname()), _node(there, "another-host"),
                    _node(_fake_pid(4), socket.gethostname())])  # (not listening: ignored)
        received = []
        for s in socks:
            assert s is not None
            s.setblocking(False)
            try:
                received.append(s.recv(16))
            except BlockingIOError:
                received.append(None)
        assert received == [b"t", None]
    finally:
        for s in socks:
            if s is not None:
                s.close()
