"""Telling a scheduler on this host that a trigger request waits, so that it takes it now
rather than at its next store poll (every 0.5 s). A leaf module: ``cronctl trigger``
sends, the runtime listens (:class:`cronctl.runtime.polls.TriggerWake`).

A wake is a hint, never the request: the request is the database row, taken exactly once
by whichever live node takes it first, and a node that hears nothing (another host, a
platform without the socket, a lost datagram) still takes it at its next poll. So the
datagram carries nothing, anyone on the host may send one (the worst it does is make a
scheduler look at the table early, at most :data:`MIN_GAP` apart), and every failure to
send or to listen is silent.

The socket is a Unix datagram socket in Linux's abstract namespace, named after the
scheduler's pid (the node row has it): no file to create or clean up, and a listener
blocked on it costs no CPU while nobody triggers anything.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterable

MIN_GAP = 0.05  # seconds between two early looks a node takes, however many wakes came


def address(pid: int) -> bytes:
    """The abstract socket name of the scheduler process ``pid``."""
    return f"\0cronctl-trigger-wake-{pid}".encode()


def supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(socket, "AF_UNIX")


def listen(pid: int) -> socket.socket | None:
    """The bound socket of process ``pid`` (blocking), or ``None`` where there is none
    (not Linux, or the name is taken: a node without it only polls)."""
    if not supported():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(address(pid))
    except OSError:
        sock.close()
        return None
    return sock


def wake(pids: Iterable[int]) -> None:
    """Tell the schedulers ``pids`` on this host that a request waits (never blocks, never
    raises: a scheduler that is not listening takes it at its next poll)."""
    if not supported():
        return
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    except OSError:
        return
    with sock:
        sock.setblocking(False)
        for pid in set(pids):
            try:
                sock.sendto(b"t", address(pid))
            except OSError:
                continue


__all__ = ["MIN_GAP", "address", "listen", "supported", "wake"]
