"""Which Host header names ``cronctl serve`` answers (DNS rebinding), and which
``Origin`` a state-changing request may come from.

A web page on ``attacker.example`` whose name the attacker re-points at 127.0.0.1 can make
the browser send requests to the server, but they carry ``Host: attacker.example``: the
server answers only the names of its listen address (for a loopback address also
``localhost``, ``127.0.0.1`` and ``::1``), the host's own names when it listens on every
interface (and then any IP address, which no page can rebind), and ``[api]
allowed_hosts``; anything else is 421.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from cronctl.apiconfig import normal_host
from cronctl.listen import is_loopback

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")


def host_of(header: str) -> str | None:
    """The name of a Host header (``name``, ``name:port``, ``[v6]:port``), normalised."""
    text = header.strip()
    if text.startswith("["):
        inside, sep, rest = text[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return normal_host(f"[{inside}]")
    name, sep, port = text.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        text = name
    return normal_host(text)


class AllowedHosts:
    def __init__(self, listen_host: str, extra: tuple[str, ...] = ()) -> None:
        self.any_address = listen_host in WILDCARDS
        names = set(extra)
        listen = normal_host(listen_host)
        if listen is not None:
            names.add(listen)
        if self.any_address or is_loopback(listen_host):
            names.update(LOOPBACK_NAMES)
        if self.any_address:
            for name in (socket.gethostname(), socket.getfqdn()):
                normal = normal_host(name)
                if normal is not None:
                    names.add(normal)
        self.names = frozenset(names)

    def allows(self, header: str | None) -> bool:
        if header is None:
            return False
        host = host_of(header)
        if host is None:
            return False
        if host in self.names:
            return True
        if self.any_address:
            try:
                ipaddress.ip_address(host)
            except ValueError:
                return False
            return True
        return False

    def allows_origin(self, origin: str) -> bool:
        """An ``Origin`` header (``scheme://host[:port]``) naming an allowed host."""
        try:
            parts = urlsplit(origin.strip())
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and bool(parts.netloc) and self.allows(
            parts.netloc)
