"""Listen addresses as ``cronctl.toml`` writes them (``[metrics] listen``, ``[api]
listen``): parsed into ``(host, port)`` and shown again. A leaf module; :mod:`cronctl.config`
re-exports its names."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

LOOPBACK = "127.0.0.1"


def parse_listen(value: Any) -> tuple[str, int]:
    """``"host:port"``, ``"[v6]:port"``, ``":port"``, ``"port"`` or a port number; without
    a host, loopback only (metrics are not for the whole network unless asked)."""
    example = 'write "host:port", e.g. "127.0.0.1:9464"'
    if isinstance(value, int) and not isinstance(value, bool):
        return LOOPBACK, _port(str(value))
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{example}, not {value!r}")
    text = value.strip()
    if text.isascii() and text.isdigit():
        return LOOPBACK, _port(text)
    if text.startswith("["):
        host, sep, port = text[1:].partition("]:")
        if not sep and text.endswith("]"):
            raise ValueError(f"{text!r} has no port; {example}")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{text!r}: {host!r} is not an IPv6 address; {example}") from None
        return host, _port(port)
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"{text!r} has no port; {example}")
    if ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets, e.g. \"[::1]:9464\"")
    if host and not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?", host):
        raise ValueError(f"{text!r}: {host!r} is not a host name or address; {example}")
    return host or LOOPBACK, _port(port)


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise ValueError(f"port {text!r} must be a number from 1 to 65535")
    return int(text)


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (an address, or ``localhost``) is reachable from this host only."""
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return host == "localhost"


def format_listen(listen: tuple[str, int]) -> str:
    host, port = listen
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
