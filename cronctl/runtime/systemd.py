"""systemd's notify protocol over ``$NOTIFY_SOCKET`` with a stdlib datagram socket.

No libsystemd: a message is one ``sendto`` of ``KEY=VALUE`` lines. ``@name`` means the
Linux abstract namespace (a leading NUL byte). Failures never stop the scheduler: the
service manager going away must not take the jobs down with it.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Protocol

log = logging.getLogger("cronctl.runtime")


class Notifier(Protocol):
    def notify(self, message: str) -> None: ...

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between ``WATCHDOG=1`` pings (half of ``WATCHDOG_USEC``), or None."""
        ...


class NullNotifier:
    """Not under systemd: every message is dropped."""

    def notify(self, message: str) -> None:
        return None

    @property
    def watchdog_interval(self) -> float | None:
        return None


class SystemdNotifier:
    """Sends to the socket named by ``$NOTIFY_SOCKET``."""

    def __init__(self, address: str, watchdog_usec: int | None = None) -> None:
        self._address = "\0" + address[1:] if address.startswith("@") else address
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._watchdog = watchdog_usec / 2_000_000 if watchdog_usec else None
        self._warned = False

    @classmethod
    def from_env(cls) -> Notifier:
        address = os.environ.get("NOTIFY_SOCKET", "")
        if not address:
            return NullNotifier()
        usec: int | None = None
        raw = os.environ.get("WATCHDOG_USEC", "")
        pid = os.environ.get("WATCHDOG_PID", "")
        # WATCHDOG_PID names the process systemd expects pings from; ignore it otherwise.
        own = not pid or pid == str(os.getpid())
        if raw.isascii() and raw.isdigit() and int(raw) > 0 and own:
            usec = int(raw)
        return cls(address, usec)

    @property
    def watchdog_interval(self) -> float | None:
        return self._watchdog

    def notify(self, message: str) -> None:
        try:
            self._sock.sendto(message.encode("utf-8", "replace"), self._address)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("cannot notify systemd at %r: %s", self._address.lstrip("\0"), exc)

    def close(self) -> None:
        self._sock.close()
