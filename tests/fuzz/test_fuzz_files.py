"""Job files and ``cronctl.toml`` files through ``cronctl validate``, ``list`` and ``next``.

Random keys, values and types, deep nesting, huge numbers, bad encodings and BOMs: each
command either works or fails as a user error (validate: its violations, one line each,
on stdout; the others: one ``error:`` line), never a traceback (``assert_clean``).
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from pathlib import Path

import pytest
from fuzz_support import assert_clean, cli, fuzz_settings
from fuzz_toml import config_text, encoded, job_file_text
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("files")


class _Directory:
    """A fresh directory per example, removed afterwards."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = Path("")

    def __enter__(self) -> Path:
        self.path = Path(tempfile.mkdtemp(dir=self.root))
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _first_job_id(data: bytes) -> str:
    """A job id the file defines (for ``next``), else ``a``."""
    try:
        jobs = tomllib.loads(data.decode("utf-8")).get("jobs")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return "a"
    if isinstance(jobs, dict) and jobs:
        return str(next(iter(jobs)))
    return "a"


_COMMANDS = (["validate"], ["validate", "--json"], ["validate", "--strict"], ["list"],
             ["list", "--json"])


@fuzz_settings(150)
@given(data=st.data(), files=st.lists(job_file_text(), min_size=1, max_size=3))
def test_job_files(scratch: Path, data: st.DataObject, files: list[str]) -> None:
    with _Directory(scratch) as root:
        (root / "cronctl.toml").write_text('[scheduler]\ndatabase = "none"\n', encoding="utf-8")
        jobs_dir = root / "jobs.d"
        jobs_dir.mkdir()
        written: list[bytes] = []
        for number, text in enumerate(files):
            raw = data.draw(encoded(text), label=f"file {number} bytes")
            (jobs_dir / f"f{number}.toml").write_bytes(raw)
            written.append(raw)
        command = data.draw(st.sampled_from(_COMMANDS), label="command")
        assert_clean(cli(command, root))
        job = _first_job_id(written[0])
        assert_clean(cli(["next", "--", job], root))


@fuzz_settings(150)
@given(data=st.data(), text=config_text())
def test_config_files(scratch: Path, data: st.DataObject, text: str) -> None:
    with _Directory(scratch) as root:
        raw = data.draw(encoded(text), label="cronctl.toml bytes")
        (root / "cronctl.toml").write_bytes(raw)
        jobs_dir = root / "jobs.d"
        jobs_dir.mkdir()
        (jobs_dir / "a.toml").write_text('[jobs.a]\ncron = "0 * * * * *"\ncommand = ["true"]\n',
                                         encoding="utf-8")
        command = data.draw(st.sampled_from(_COMMANDS), label="command")
        assert_clean(cli(command, root))
        assert_clean(cli(["next", "a"], root))
        # The same file named explicitly, from another directory.
        assert_clean(cli(["-c", str(root / "cronctl.toml"), "validate"], scratch))
