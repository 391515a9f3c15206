"""The supervisor: ends command process groups when the scheduler stops beating
(docs/behaviour.md#liveness, "No attempt outlives its scheduler": also a scheduler that is alive but
frozen by SIGSTOP, swap or a paused VM must not leave its commands running once its lease can be
taken over).

It is a small process of its own (its own session, so a stop signal to the scheduler's
process group does not stop it), fed through a pipe by the scheduler:

- ``s`` as a heartbeat is sent, then ``bT`` once the store accepted it on the session
  holding the node's lock (``pT`` when stamped without it) and ``T`` is when it was sent,
  or ``f`` when it failed (``r``: failed, with proof that the server restarted);
- ``+PGID`` when a command starts, ``-PGID`` before its leader is reaped (on the reactor
  thread; while the leader is a zombie its pid pins the group id, so a group id the
  supervisor still knows is never another process's).

It sends SIGKILL to every group it knows, and forgets them, once the last accepted beat
was sent longer ago than its limit: the long one (``limit``, inside the lease) while the
last beat confirmed the lock and no beat is under way, the short one (``doubt``, inside
the others' lock grace) from the moment a beat is in flight, failed, or was stamped
without the lock, ``restart`` after a failure that proves a server restart. Also when
it wakes from a freeze of its own longer than that (its whole node stopped) with beats
waiting: those come too late. When the pipe closes (the scheduler exited or died), it
ends them too, and exits. Nothing it does depends on the frozen scheduler. The numbers:
docs/liveness.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cronctl.dispatch.base import Outcome

log = logging.getLogger("cronctl.dispatch")

# The supervisor's own program: stdlib only, no cronctl import (it starts in ~20 ms and
# runs even if the installed cronctl changes under it).
_PROGRAM = r"""
import os, select, signal, sys, time
# The limits, counted from when the last accepted beat was SENT (never from when the
# scheduler heard back: a slow commit only eats the margin of the others' grace):
# "ok" (its lock confirmed on the stamping session), "doubt" (a beat in flight, failed, or
# stamped without the lock), "restart" (a failure that proves the server restarted).
limits = dict(zip(("ok", "doubt", "restart"), map(float, sys.argv[1:4])))
groups = set()
last = time.monotonic()
state = "ok"
pending = b""

def end(why):
    if groups:
        sys.stderr.write("cronctl supervisor: %s: ending process groups %s\n"
                         % (why, " ".join(map(str, sorted(groups)))))
        sys.stderr.flush()
    for pgid in list(groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    groups.clear()

def why():
    if state == "ok":
        return "no heartbeat for %gs" % limits[state]
    return "liveness not confirmed for %gs (%s)" % (
        limits[state], "the server restarted" if state == "restart"
        else "heartbeat failed or did not complete")

while True:
    wait = max(0.0, last + limits[state] - time.monotonic())
    ready = select.select([0], [], [], wait)[0]
    if not ready:
        if time.monotonic() >= last + limits[state]:
            end(why())
            last = time.monotonic()
        continue
    data = os.read(0, 65536)
    if not data:
        end("the scheduler is gone")
        break
    if time.monotonic() >= last + limits[state]:
        # This process was frozen or starved past the limit too (the node's whole tree
        # stopped, a paused VM): a beat that waited in the pipe, or one sent as the
        # scheduler woke, comes too late; the lease may have been taken over meanwhile.
        end(why())
    pending += data
    *lines, pending = pending.split(b"\n")
    for line in lines:
        kind, rest = line[:1], line[1:]
        if kind in (b"b", b"p"):  # accepted; with the lock held (b) or not (p)
            if rest:
                last = max(last, float(rest))
            else:
                last = time.monotonic()
            state = "ok" if kind == b"b" else "doubt"
        elif kind == b"s" or kind == b"f":  # a beat starts / failed
            if state == "ok":
                state = "doubt"
        elif kind == b"r":
            if state != "ok":
                state = "restart"
        elif kind == b"+":
            groups.add(int(rest))
        elif kind == b"-":
            groups.discard(int(rest))
"""


class Supervisor:
    """The scheduler's end of the pipe. Every method may be called from any thread and
    never blocks: a message that does not fit (the supervisor is stuck) is dropped."""

    def __init__(self, limit: float, doubt: float | None = None,
                 restart: float | None = None) -> None:
        """``limit``: seconds after the last accepted beat while its lock was confirmed;
        ``doubt`` (default ``limit``): while a beat is in flight or failed, or the last
        one was stamped without the lock; ``restart`` (default ``doubt``): after a
        failure that proves the database server restarted."""
        self.limit = limit
        self.doubt = limit if doubt is None else doubt
        self.restart = self.doubt if restart is None else restart
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-I", "-c", _PROGRAM, f"{limit:.3f}", f"{self.doubt:.3f}",
             f"{self.restart:.3f}"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=None,
            start_new_session=True, close_fds=True)
        assert self._proc.stdin is not None
        self._fd = self._proc.stdin.fileno()
        os.set_blocking(self._fd, False)
        self._broken = False
        self._last_beat = time.monotonic()
        self._silence_ended = 0.0  # when the last silence longer than ``limit`` ended
        # The supervisor's state as it will read the messages (its limit now), and when
        # the last silence passed its limit: when it ended the groups it knew.
        self._state = "ok"
        self._killed_at = 0.0

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def beat(self, sent: float | None = None, *, locked: bool = True) -> None:
        """A heartbeat the store accepted; ``sent``: the :func:`time.monotonic` time it was
        sent (the supervisor counts from then: the others count from the server's stamp,
        which is later); ``locked``: stamped on the session that holds the node's lock."""
        now = time.monotonic()
        if now - self._last_beat > self.doubt:
            self._silence_ended = now
        if now - self._last_beat > self._limit_now():
            self._killed_at = self._last_beat + self._limit_now()
        self._last_beat = max(self._last_beat, now if sent is None else sent)
        self._state = "ok" if locked else "doubt"
        stamp = b"" if sent is None else b"%.6f" % sent
        self._send((b"b" if locked else b"p") + stamp + b"\n")

    def beating(self) -> None:
        """A heartbeat is being sent: until it is accepted, the ``doubt`` limit holds."""
        if self._state == "ok":
            self._state = "doubt"
        self._send(b"s\n")

    def failed(self, *, restart: bool = False) -> None:
        """A heartbeat failed; ``restart``: with proof that the server restarted (its
        connections refused as "starting up" or "shutting down")."""
        if self._state == "ok":
            self._state = "doubt"
        if restart:
            self._state = "restart"
        self._send(b"r\n" if restart else b"f\n")

    def silent_since(self, since: float) -> bool:
        """Whether the beats stopped for longer than ``limit`` at some time after
        ``since`` (a :func:`time.monotonic` value): a SIGKILL of a command that ran then
        is most likely the supervisor's."""
        now = time.monotonic()
        return self._silence_ended > since or now - self._last_beat > self.doubt

    def killed_ago(self) -> float:
        """Seconds since the supervisor ended its groups for the last time (0 when it has
        not, or just now): a group it killed while this scheduler was frozen or cut off
        ended then, not when the scheduler came to reap it."""
        now = time.monotonic()
        at = self._last_beat + self._limit_now()
        if now < at:
            at = self._killed_at
        return max(0.0, now - at) if at else 0.0

    def _limit_now(self) -> float:
        return {"ok": self.limit, "doubt": self.doubt}.get(self._state, self.restart)

    def started(self, pgid: int) -> None:
        self._send(b"+%d\n" % pgid)

    def ending(self, pgid: int) -> None:
        self._send(b"-%d\n" % pgid)

    def _send(self, message: bytes) -> None:
        with self._lock:
            if self._proc is None:
                return
            try:
                os.write(self._fd, message)  # < PIPE_BUF: written whole or not at all
            except BlockingIOError:
                pass
            except OSError as exc:
                if not self._broken:
                    self._broken = True
                    log.warning("the command supervisor is gone (%s): commands are no "
                                "longer ended when this scheduler freezes", exc)

    def close(self) -> None:
        """Stop it (it ends the groups it still knows: call after the commands ended)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def ended_by_then(outcome: Outcome, supervisor: Supervisor | None, started: float) -> Outcome:
    """``outcome``, dated back to the supervisor's kill when its limit passed while the
    attempt ran (the scheduler frozen or cut off): it ended by then at the latest, however
    it ended, and a reap after the scheduler woke says nothing of when."""
    if supervisor is None or not supervisor.silent_since(started):
        return outcome
    return replace(outcome, ended_ago=supervisor.killed_ago())


__all__ = ["Supervisor", "ended_by_then"]
