"""``[api]`` in ``cronctl.toml``: what ``cronctl serve`` listens on, where its tokens are
and how long a read may take (docs/behaviour.md#the-http-api). A leaf module: :mod:`cronctl.config`
reads the table with :func:`read_api`; the server takes the settings it returns."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from cronctl.durations import DurationError, parse_duration

API_KEYS = ("listen", "tokens_file", "query_timeout", "allowed_hosts", "session_lifetime")
DEFAULT_LISTEN = ("127.0.0.1", 8321)
MAX_QUERY_TIMEOUT = timedelta(minutes=10)
MAX_SESSION_LIFETIME = timedelta(days=30)
# A host name as a Host header carries it (no port, no trailing dot), or an IP address.
_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")


@dataclass(frozen=True)
class ApiSettings:
    """``listen`` is ``None`` when ``[api] listen`` is not set (``cronctl serve`` then
    listens on :data:`DEFAULT_LISTEN`, loopback). Without ``tokens_file`` ``cronctl
    serve`` does not start: every request over TCP presents a token. ``allowed_hosts``
    are the Host header names served besides the listen address's own (lowercase, no
    port): the names a reverse proxy or the users' browsers use."""

    listen: tuple[str, int] | None = None
    tokens_file: Path | None = None
    query_timeout: timedelta = timedelta(seconds=10)
    allowed_hosts: tuple[str, ...] = ()
    session_lifetime: timedelta = timedelta(hours=12)


def read_api(table: dict[str, Any], base_dir: Path,
             parse_listen: Callable[[Any], tuple[str, int]],
             user_path: Callable[[str, Path], Path]
             ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The settings' changes from ``table`` and the problems as (key, message)."""
    changes: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for key, value in table.items():
        try:
            if key == "listen":
                changes["listen"] = parse_listen(value)
            elif key == "tokens_file":
                if not isinstance(value, str) or not value.strip():
                    raise ValueError(f"must be a path, not {value!r}")
                changes["tokens_file"] = user_path(value.strip(), base_dir)
            elif key == "allowed_hosts":
                changes["allowed_hosts"] = parse_hosts(value)
            elif key == "session_lifetime":
                lifetime = parse_duration(value)
                if not timedelta(seconds=1) <= lifetime <= MAX_SESSION_LIFETIME:
                    raise ValueError(f"from 1s to 30d, not {value!r}")
                changes["session_lifetime"] = lifetime
            elif key == "query_timeout":
                timeout = parse_duration(value)
                if timeout > MAX_QUERY_TIMEOUT:
                    raise ValueError(f"at most 10m, not {value!r}")
                changes["query_timeout"] = timeout
            else:
                problems.append((key, "unknown key"))
        except (ValueError, DurationError) as exc:
            problems.append((key, str(exc)))
    return changes, problems


def parse_hosts(value: Any) -> tuple[str, ...]:
    """``["dash.example.com", "10.0.0.5"]``: host names or IP addresses, as a browser
    puts them in the Host header (no scheme, port or path; IPv6 without brackets)."""
    if not isinstance(value, list):
        raise ValueError(f'write a list of host names, e.g. ["cron.example.com"], not {value!r}')
    hosts: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise ValueError(f"{item!r} is not a host name")
        host = normal_host(item.strip())
        if host is None:
            raise ValueError(f"{item!r} is not a host name or IP address (no scheme, port "
                             "or path)")
        if host not in hosts:
            hosts.append(host)
    return tuple(hosts)


def normal_host(text: str) -> str | None:
    """``text`` as one compares Host names (lowercase, no trailing dot, an IPv6 address
    without brackets and in its compressed form), or ``None`` when it is neither a host
    name nor an IP address."""
    host = text.lower().removesuffix(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            return None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    return host if _HOST_NAME.fullmatch(host) else None
