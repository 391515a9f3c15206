"""The fuzz settings themselves: a longer campaign scales the example counts and each
test's timeout alike, and make test's default run is derandomized."""

from __future__ import annotations

import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st


def _wrapped() -> object:
    @fuzz_settings(10)
    @given(st.integers())
    def example(n: int) -> None: ...

    return example


def test_a_long_campaign_scales_examples_and_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRONCTL_FUZZ_EXAMPLES", "1000")  # 10x the default scale
    test = _wrapped()
    (mark,) = [m for m in test.pytestmark if m.name == "timeout"]  # type: ignore[attr-defined]
    assert mark.args == (1200.0,)
    chosen = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
    assert chosen.max_examples == 100 and not chosen.derandomize


def test_the_default_run_keeps_the_default_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRONCTL_FUZZ_EXAMPLES", raising=False)
    test = _wrapped()
    (mark,) = [m for m in test.pytestmark if m.name == "timeout"]  # type: ignore[attr-defined]
    assert mark.args == (120.0,)
    chosen = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
    assert chosen.max_examples == 10 and chosen.derandomize
    monkeypatch.setenv("CRONCTL_FUZZ_EXAMPLES", "5")  # a short run never shortens it
    (mark,) = [m for m in _wrapped().pytestmark if m.name == "timeout"]  # type: ignore[attr-defined]
    assert mark.args == (120.0,)
