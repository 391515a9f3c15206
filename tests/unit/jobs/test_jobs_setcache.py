"""The validated job set cache of ``cronctl list`` (:mod:`cronctl.jobs.setcache`): used only
while every input is unchanged, never from a file someone else could write."""

from __future__ import annotations

import os
import pickle
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronctl.jobs import setcache
from cronctl.jobs.loader import LoadResult, load_jobs
from cronctl.jobs.settings import JobSettings

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


class Project:
    def __init__(self, root: Path, jobs: int = 3) -> None:
        self.root = root
        self.jobs_dir = root / "jobs.d"
        self.jobs_dir.mkdir()
        self.config = root / "cronctl.toml"
        self.config.write_text('[scheduler]\njobs_dir = "jobs.d"\n')
        self.cache = root / "state"
        self.cache.mkdir(mode=0o700)
        self.write("a.toml", jobs)
        self.loads = 0

    def write(self, name: str, jobs: int, program: str = "/bin/true") -> None:
        (self.jobs_dir / name).write_text("".join(
            f'[jobs.{name[:-5]}-{i}]\ncron = "{i % 60} * * * *"\ncommand = ["{program}"]\n'
            for i in range(jobs)))

    @property
    def settings(self) -> JobSettings:
        return JobSettings(jobs_dir=self.jobs_dir, base_dir=self.root)

    def load(self) -> LoadResult:
        self.loads += 1
        return load_jobs(self.settings, now=NOW)

    def listed(self) -> LoadResult:
        return setcache.cached_load(self.settings, self.config, self.cache, self.load)

    def cache_files(self) -> list[Path]:
        return sorted(self.cache.glob("jobs-*.pickle"))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setattr(setcache, "MIN_JOBS", 1)
    # Written in this process (the command writes it in a forked child: tested below).
    monkeypatch.setattr(setcache, "_write_aside", setcache._write)
    return Project(tmp_path)


def test_a_second_listing_comes_from_the_cache_and_equals_the_load(project: Project) -> None:
    first = project.listed()
    second = project.listed()
    assert project.loads == 1
    assert second.jobs == first.jobs and second.warnings == first.warnings
    (path,) = project.cache_files()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("change", ["edit", "touch", "add", "remove", "rename", "chmod",
                                    "config", "symlink"])
def test_any_change_to_the_inputs_reads_the_files_again(project: Project, change: str) -> None:
    project.listed()
    job_file = project.jobs_dir / "a.toml"
    if change == "edit":
        project.write("a.toml", 4)
    elif change == "touch":
        os.utime(job_file, ns=(1, 1))
    elif change == "add":
        project.write("b.toml", 1)
    elif change == "remove":
        job_file.unlink()
    elif change == "rename":
        job_file.rename(project.jobs_dir / "c.toml")
    elif change == "chmod":
        job_file.chmod(0o600)
    elif change == "config":
        project.config.write_text('[scheduler]\njobs_dir = "jobs.d"\nnode_id = "x"\n')
    elif change == "symlink":
        elsewhere = project.root / "elsewhere.toml"
        elsewhere.write_text('[jobs.z]\ncron = "0 * * * *"\ncommand = ["/bin/true"]\n')
        (project.jobs_dir / "z.toml").symlink_to(elsewhere)
    after = project.listed()
    assert project.loads == 2
    assert after.jobs == project.load().jobs


def test_a_program_that_is_gone_is_not_hidden_by_the_cache(project: Project) -> None:
    program = project.root / "tool"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    project.write("a.toml", 2, program=str(program))
    assert project.listed().ok
    program.unlink()
    result = project.listed()
    assert project.loads == 2
    assert result.ok and "tool" in str(result.warnings[0])
    project.listed()  # still missing, as the cached set says: a hit
    assert project.loads == 2


@pytest.mark.parametrize("spoil", ["group-writable", "corrupt", "old", "other-key"])
def test_a_cache_file_that_cannot_be_trusted_is_a_miss(project: Project, spoil: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    project.listed()
    (path,) = project.cache_files()
    if spoil == "group-writable":
        path.chmod(0o620)
    elif spoil == "corrupt":
        path.write_bytes(b"\x80\x05garbage")
    elif spoil == "old":
        with path.open("rb") as f:
            key, written = pickle.load(f)
            rest = f.read()
        path.write_bytes(pickle.dumps((key, written - setcache.MAX_AGE - 1)) + rest)
    elif spoil == "other-key":
        monkeypatch.setattr(setcache, "FORMAT", setcache.FORMAT + 1)
    assert project.listed().ok
    assert project.loads == 2


def test_a_folder_others_may_write_is_neither_read_nor_written(project: Project) -> None:
    project.cache.chmod(0o777)
    project.listed()
    project.listed()
    assert project.loads == 2
    assert project.cache_files() == []


def test_sets_with_violations_or_below_the_size_bound_are_not_kept(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    (project.jobs_dir / "bad.toml").write_text('[jobs.bad]\ncron = "nope"\ncommand = ["x"]\n')
    assert not project.listed().ok
    assert project.cache_files() == []
    (project.jobs_dir / "bad.toml").unlink()
    monkeypatch.setattr(setcache, "MIN_JOBS", 100)
    project.listed()
    assert project.cache_files() == []


def test_the_command_writes_the_cache_in_a_child_it_does_not_wait_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setcache, "MIN_JOBS", 1)
    project = Project(tmp_path)
    project.listed()
    # The child exits on its own; reap it so no zombie outlives the test.
    pid, status = os.wait()
    assert os.waitstatus_to_exitcode(status) == 0
    (path,) = project.cache_files()
    project.listed()
    assert project.loads == 1


def test_the_cache_directory_follows_the_state_directory(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    from cronctl.config import Config

    def state_dir(database: str) -> Path:
        return Config(path=None, base_dir=tmp_path, database=database, jobs_dir=tmp_path,
                      node_id="n").state_dir

    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    assert state_dir(f"sqlite:///{tmp_path}/x/state.db") == tmp_path / "x"
    assert state_dir("postgresql://h/db") == Path.home() / ".cache" / "cronctl"
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/cronctl:/other")
    assert state_dir("sqlite:///a.db") == Path("/var/lib/cronctl")


def test_a_distribution_installed_on_the_path_reads_the_files_again(
        project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry points are not scanned on a read: installing a distribution (which may
    bring service entry points) adds an entry to a directory on the path instead."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    project.listed()
    project.listed()
    assert project.loads == 1
    (site / "cronctl_services_demo-1.0.dist-info").mkdir()
    project.listed()
    assert project.loads == 2


def test_no_set_is_kept_while_service_entry_points_exist(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from cronctl.jobs.registry import GROUP

    found = importlib.metadata.EntryPoints(
        [importlib.metadata.EntryPoint("demo", "demo_pkg:jobs", GROUP)])
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: found if group == GROUP else
                        importlib.metadata.EntryPoints([]))
    project.listed()
    project.listed()
    assert project.loads == 2 and project.cache_files() == []
