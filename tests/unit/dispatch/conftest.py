from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture
def make_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], str]]:
    """Write a uniquely named module on sys.path; returns its name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def make(source: str, name: str | None = None) -> str:
        name = name or f"cronctl_testmod_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{name}.py").write_text(source)
        names.append(name)
        return name

    yield make  # type: ignore[misc]
    for name in names:
        sys.modules.pop(name, None)
