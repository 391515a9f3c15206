"""``[api]`` in ``cronctl.toml``: what ``cronctl serve`` listens on, where its tokens are
and how long a read may take (SPEC section 10). A leaf module: :mod:`cronctl.config`
reads the table with :func:`read_api`; the server takes the settings it returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from cronctl.durations import DurationError, parse_duration

API_KEYS = ("listen", "tokens_file", "query_timeout")
DEFAULT_LISTEN = ("127.0.0.1", 8321)
MAX_QUERY_TIMEOUT = timedelta(minutes=10)


@dataclass(frozen=True)
class ApiSettings:
    """``listen`` is ``None`` when ``[api] listen`` is not set (``cronctl serve`` then
    listens on :data:`DEFAULT_LISTEN`, loopback). Without ``tokens_file`` the API is
    read-only and answers loopback clients only."""

    listen: tuple[str, int] | None = None
    tokens_file: Path | None = None
    query_timeout: timedelta = timedelta(seconds=10)


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
