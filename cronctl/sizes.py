"""Sizes as users write them: ``"512M"``, ``"1G"``, ``"64K"``, ``"1MiB"`` or a bare number
of bytes. Units are binary (``K`` = 1024 bytes), the way ``ulimit`` and ``head -c`` read
them; every size is at most :data:`MAX_SIZE`, so no caller overflows a C ``rlim_t``."""

from __future__ import annotations

import re

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE = re.compile(r"(\d+)\s*([kmgt]?)(?:i?b)?")
MAX_SIZE = 1024**5  # 1 PiB
_EXAMPLES = 'write e.g. "512M", "1G" or a number of bytes'


class SizeError(ValueError):
    """A size that cannot be read; the message is one line."""


def parse_size(value: object) -> int:
    """A size in bytes (>= 1). Raises :class:`SizeError` with a one-line message."""
    if isinstance(value, bool):
        raise SizeError(f"{value!r} is not a size; {_EXAMPLES}")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str):
        match = _SIZE.fullmatch(value.strip().lower())
        if match is None:
            raise SizeError(f"{value!r} is not a size; {_EXAMPLES}")
        digits = match.group(1)
        if len(digits) > 20:
            raise SizeError(f"{value!r} is larger than the maximum of 1 PiB")
        size = int(digits) * _UNITS[match.group(2)]
    else:
        raise SizeError(f"{value!r} is not a size; {_EXAMPLES}")
    if size < 1:
        raise SizeError(f"{value!r}: a size must be at least 1 byte")
    if size > MAX_SIZE:
        raise SizeError(f"{value!r} is larger than the maximum of 1 PiB")
    return size


def format_size(size: int) -> str:
    """``1048576`` → ``"1M"``; sizes that are not whole units stay in bytes."""
    for unit, factor in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


__all__ = ["MAX_SIZE", "SizeError", "format_size", "parse_size"]
