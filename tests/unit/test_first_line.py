"""``cronctl.errors.first_line``: an exception told in one line."""

from __future__ import annotations

from cronctl.errors import StoreError, first_line


def test_the_first_line_of_the_message() -> None:
    assert first_line(ValueError("bad value\nDETAIL: more\n")) == "bad value"
    assert first_line(StoreError("  \n cannot connect  \nhint")) == "cannot connect"


def test_an_empty_message_is_the_type_name() -> None:
    assert first_line(TimeoutError()) == "TimeoutError"
    assert first_line(OSError(" \n ")) == "OSError"
