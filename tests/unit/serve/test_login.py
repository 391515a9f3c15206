"""The login form's ``next`` only ever leads back into this server (no open redirect)."""

from __future__ import annotations

import pytest

from cronctl.serve.login import safe_next


@pytest.mark.parametrize(("given", "kept"), [
    ("/jobs/backup?at=2h#why", "/jobs/backup?at=2h#why"),
    ("/", "/"),
    ("//evil.example/x", "/"),
    ("https://evil.example/", "/"),
    ("/\\\\evil.example", "/"),
    ("javascript:alert(1)", "/"),
    ("", "/"),
])
def test_next_stays_on_this_server(given: str, kept: str) -> None:
    assert safe_next(given) == kept
