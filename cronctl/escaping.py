"""Control characters made visible: a leaf module (stdlib only), so that the commands
that print stored text (``history``, ``logs``) do not import the dispatchers with it."""

from __future__ import annotations

_ESCAPES = {i: f"\\x{i:02x}" for i in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
_ESCAPES.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def escape_control(text: str) -> str:
    """``text`` with control characters (C0, DEL, C1) written as ``\\n``, ``\\x1b``, ...:
    one log line stays one line and cannot move a terminal's cursor."""
    # Every character escaped is unprintable: most text has none, and this check is ten
    # times cheaper than the translation (0.3 us against 3.5 for a 100-character line).
    if text.isprintable():
        return text
    return text.translate(_ESCAPES)


__all__ = ["escape_control"]
