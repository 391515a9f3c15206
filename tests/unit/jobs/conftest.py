"""Fixtures of the jobs tests: a jobs directory, a loader with a fixed ``now`` and an
empty service registry, and fake installed distributions on sys.path."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from jobs_helpers import NOW, FakeDists, Load, WriteJob, make_settings

from cronctl.jobs.loader import LoadResult, load_jobs
from cronctl.jobs.registry import ServiceRegistry


@pytest.fixture
def jobs_dir(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.d"
    path.mkdir()
    return path


@pytest.fixture
def write(jobs_dir: Path) -> WriteJob:
    def write_file(name: str, text: str) -> Path:
        path = jobs_dir / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write_file


@pytest.fixture
def load(tmp_path: Path, jobs_dir: Path) -> Load:
    """load_jobs with a fixed now and, unless given, an empty service registry."""

    def run(*, registry: ServiceRegistry | None = None, database: str = "sqlite:///s.db",
            tracked: bool = True) -> LoadResult:
        settings = make_settings(tmp_path, database=database, tracked=tracked)
        return load_jobs(settings, now=NOW, registry=registry or ServiceRegistry())

    return run


@pytest.fixture
def fake_dists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDists]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    fakes = FakeDists(root)
    yield fakes
    for top in fakes.modules:
        for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
            del sys.modules[name]
