"""printable: control characters, line separators and lone surrogates made visible,
other text untouched (the fast path for printable text gives what the translation
gives). One table for the CLI's error line, validation's violations and the logs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cronctl.escaping import _ESCAPES, printable


@given(st.text())
def test_same_as_the_translation(text: str) -> None:
    assert printable(text) == text.translate(_ESCAPES)


@given(st.text())
def test_always_one_encodable_line(text: str) -> None:
    shown = printable(text)
    assert len(shown.splitlines()) <= 1
    shown.encode("utf-8")  # no lone surrogate left


def test_examples() -> None:
    assert printable("plain text, é ü 日本") == "plain text, é ü 日本"
    assert printable("a\nb\x1b[2J\x7f\x85\t") == "a\\nb\\x1b[2J\\x7f\\x85\\t"
    # The line and paragraph separators end a line for str.splitlines and many viewers.
    assert printable("a\u2028b\u2029c") == "a\\u2028b\\u2029c"
    assert printable("bad byte \udcff") == "bad byte \\udcff"


def test_the_violation_and_the_error_line_escape_alike() -> None:
    from cronctl.jobs.violation import Violation

    text = "x\u2028y\x1b"
    assert str(Violation("f.toml:1", "a", "cron", text)).endswith(printable(text))
