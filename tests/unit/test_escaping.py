"""escape_control: control characters made visible, other text untouched (the fast
path for printable text gives what the translation gives)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cronctl.escaping import _ESCAPES, escape_control


@given(st.text())
def test_same_as_the_translation(text: str) -> None:
    assert escape_control(text) == text.translate(_ESCAPES)


def test_examples() -> None:
    assert escape_control("plain text, é ü 日本") == "plain text, é ü 日本"
    assert escape_control("a\nb\x1b[2J\x7f\x85\t") == "a\\nb\\x1b[2J\\x7f\\x85\\t"
    assert escape_control("\u2028 stays") == "\u2028 stays"  # unprintable, not escaped
