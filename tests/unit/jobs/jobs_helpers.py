"""Shared helpers of the jobs tests (imported by conftest and tests alike)."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from cronctl.config import Config
from cronctl.jobs.loader import LoadResult
from cronctl.jobs.settings import JobSettings

WriteJob = Callable[[str, str], Path]
Load = Callable[..., LoadResult]

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def make_settings(base: Path, *, database: str = "sqlite:///state.db", tracked: bool = True
                  ) -> JobSettings:
    """The loader's settings as a configuration with these values makes them."""
    config = Config(path=None, base_dir=base, database=database, jobs_dir=base / "jobs.d",
                    node_id="test-node", tracked=tracked)
    return config.job_settings


class FakeDists:
    """Write importable modules and dist-info directories into one sys.path entry."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: list[str] = []

    def unique(self, stem: str) -> str:
        return f"{stem}_{uuid.uuid4().hex[:8]}"

    def module(self, name: str, source: str) -> str:
        path = self.root / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(self.root).parents:
            if str(parent) != ".":
                init = self.root / parent / "__init__.py"
                if not init.exists():
                    init.write_text("")
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        self.modules.append(name.split(".")[0])
        return name

    def dist(self, name: str, entry_points: dict[str, str]) -> None:
        # Installers write the normalized name (dashes as underscores) in the directory name.
        info = self.root / f"{name.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        info.joinpath("METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
        )
        lines = ["[cronctl.services]", *(f"{k} = {v}" for k, v in entry_points.items())]
        info.joinpath("entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


