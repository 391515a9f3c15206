"""The supervisor: ends command process groups when the scheduler stops beating (SPEC
section 4, "No attempt outlives its scheduler": also a scheduler that is alive but
frozen by SIGSTOP, swap or a paused VM must not leave its commands running once its
lease can be taken over).

It is a small process of its own (its own session, so a stop signal to the scheduler's
process group does not stop it), fed through a pipe by the scheduler:

- ``b`` after every heartbeat the store accepted (on the liveness thread);
- ``+PGID`` when a command starts, ``-PGID`` before its leader is reaped (on the reactor
  thread; while the leader is a zombie its pid pins the group id, so a group id the
  supervisor still knows is never another process's).

When no ``b`` came for ``limit`` seconds it sends SIGKILL to every group it knows and
forgets them; also when it wakes from a freeze of its own longer than that (its whole
node stopped) with beats waiting: those come too late. When the pipe closes (the
scheduler exited or died), it ends them too, and exits. Nothing it does depends on the
frozen scheduler. The runtime chooses ``limit``: see CONTRIBUTING.md, "The supervisor's
timing".
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time

log = logging.getLogger("cronctl.dispatch")

# The supervisor's own program: stdlib only, no cronctl import (it starts in ~20 ms and
# runs even if the installed cronctl changes under it).
_PROGRAM = r"""
import os, select, signal, sys, time
limit = float(sys.argv[1])
groups = set()
last = time.monotonic()
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

while True:
    wait = max(0.0, last + limit - time.monotonic())
    ready = select.select([0], [], [], wait)[0]
    if not ready:
        if time.monotonic() >= last + limit:
            end("no heartbeat for %gs" % limit)
            last = time.monotonic()
        continue
    data = os.read(0, 65536)
    if not data:
        end("the scheduler is gone")
        break
    if time.monotonic() >= last + limit:
        # This process was frozen or starved past the limit too (the node's whole tree
        # stopped, a paused VM): a beat that waited in the pipe, or one sent as the
        # scheduler woke, comes too late; the lease may have been taken over meanwhile.
        end("no heartbeat for %gs" % limit)
    pending += data
    *lines, pending = pending.split(b"\n")
    for line in lines:
        if line == b"b":
            last = time.monotonic()
        elif line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
"""


class Supervisor:
    """The scheduler's end of the pipe. Every method may be called from any thread and
    never blocks: a message that does not fit (the supervisor is stuck) is dropped."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-I", "-c", _PROGRAM, f"{limit:.3f}"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=None,
            start_new_session=True, close_fds=True)
        assert self._proc.stdin is not None
        self._fd = self._proc.stdin.fileno()
        os.set_blocking(self._fd, False)
        self._broken = False
        self._last_beat = time.monotonic()
        self._silence_ended = 0.0  # when the last silence longer than ``limit`` ended

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def beat(self) -> None:
        now = time.monotonic()
        if now - self._last_beat > self.limit:
            self._silence_ended = now
        self._last_beat = now
        self._send(b"b\n")

    def silent_since(self, since: float) -> bool:
        """Whether the beats stopped for longer than ``limit`` at some time after
        ``since`` (a :func:`time.monotonic` value): a SIGKILL of a command that ran then
        is most likely the supervisor's."""
        now = time.monotonic()
        return self._silence_ended > since or now - self._last_beat > self.limit

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


__all__ = ["Supervisor"]
