"""A path on which service discovery found no ``cronctl.services`` entry points is
remembered in the state directory (:mod:`cronctl.jobs.pathscan`), so read commands skip
importing :mod:`importlib.metadata`, and never hides a distribution installed or edited
since, nor trusts a marker someone else could have written."""

from __future__ import annotations

import os
from importlib.metadata import EntryPoints
from pathlib import Path

import pytest
from jobs_helpers import FakeDists

from cronctl.jobs import pathscan, registry
from cronctl.jobs.registry import discover_services

SERVICE = """
from cronctl.jobs.decorators import cron_job, operation, service


@service(namespace="acme", name="scan")
class Scan:
    @operation("run")
    @cron_job(id="scan.run", cron="0 3 * * *")
    def run(self) -> None:
        pass
"""


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    return folder


class Scans:
    """Counts the real scans of the installed distributions."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = registry.service_entry_points

        def counted() -> EntryPoints:
            self.count += 1
            return real()

        monkeypatch.setattr(registry, "service_entry_points", counted)


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Scans:
    return Scans(monkeypatch)


def _ours(found: registry.ServiceRegistry) -> list[str]:
    return sorted(op for op in found.operations if op.startswith("acme.scan"))


def test_a_path_without_entry_points_is_scanned_once(fake_dists: FakeDists, state: Path,
                                                     scans: Scans) -> None:
    fake_dists.dist("plain-tool", {})  # a distribution, but no cronctl.services
    first = discover_services(remember_in=state)
    second = discover_services(remember_in=state)
    assert scans.count == 1
    assert first.operations == second.operations == {} and second.violations == ()
    marker = state / pathscan.MARKER
    assert oct(marker.stat().st_mode & 0o777) == oct(0o600)
    assert marker.read_text() == pathscan.path_digest()


def test_without_a_state_directory_every_discovery_scans(fake_dists: FakeDists,
                                                        scans: Scans) -> None:
    discover_services()
    discover_services()
    assert scans.count == 2  # validate and run: the distributions are always read


def test_a_distribution_installed_afterwards_is_found(fake_dists: FakeDists, state: Path,
                                                     scans: Scans) -> None:
    assert discover_services(remember_in=state).operations == {}
    module = fake_dists.module(fake_dists.unique("scan_pkg"), SERVICE)
    fake_dists.dist("scan-services", {"scan": f"{module}:Scan"})
    found = discover_services(remember_in=state)
    assert _ours(found) == ["acme.scan.run"]
    assert [job.spec.id for job in found.cron_jobs] == ["scan.run"]
    assert scans.count == 2


def test_entry_points_edited_in_place_are_found(fake_dists: FakeDists, state: Path) -> None:
    fake_dists.dist("later-services", {})
    assert discover_services(remember_in=state).operations == {}
    module = fake_dists.module(fake_dists.unique("scan_pkg"), SERVICE)
    points = fake_dists.root / "later_services-1.0.dist-info" / "entry_points.txt"
    inode = points.stat().st_ino
    with points.open("a", encoding="utf-8") as f:  # the same file, not a new one
        f.write(f"scan = {module}:Scan\n")
    assert points.stat().st_ino == inode
    assert _ours(discover_services(remember_in=state)) == ["acme.scan.run"]


def test_found_entry_points_are_not_remembered(fake_dists: FakeDists, state: Path,
                                               scans: Scans) -> None:
    module = fake_dists.module(fake_dists.unique("scan_pkg"), SERVICE)
    fake_dists.dist("scan-services", {"scan": f"{module}:Scan"})
    for _ in range(2):
        assert _ours(discover_services(remember_in=state)) == ["acme.scan.run"]
    assert scans.count == 2
    assert not (state / pathscan.MARKER).exists()


def test_a_directory_on_the_path_may_change_otherwise(fake_dists: FakeDists) -> None:
    """The state directory can be on the path (``python -m cronctl`` in it): its files
    come and go without changing what is installed."""
    before = pathscan.path_digest()
    (fake_dists.root / "state.db-journal").write_text("x")
    (fake_dists.root / "notes").mkdir()
    assert pathscan.path_digest() == before
    (fake_dists.root / "gone-2.0.dist-info").mkdir()
    assert pathscan.path_digest() != before


def test_a_directory_a_load_appends_counts(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    before = pathscan.path_digest([extra])
    (extra / "svc-1.0.dist-info").mkdir()
    assert pathscan.path_digest([extra]) != before


@pytest.mark.parametrize("spoil", ["marker group-writable", "folder world-writable",
                                   "marker a link", "other digest"])
def test_a_marker_that_cannot_be_trusted_is_not_believed(fake_dists: FakeDists, state: Path,
                                                         scans: Scans, spoil: str) -> None:
    discover_services(remember_in=state)
    marker = state / pathscan.MARKER
    if spoil == "marker group-writable":
        marker.chmod(0o620)
    elif spoil == "folder world-writable":
        state.chmod(0o777)
    elif spoil == "marker a link":
        real = state / "real"
        marker.rename(real)
        marker.symlink_to(real)
    else:
        marker.write_text("0" * 64)
    assert not pathscan.known_absent(state, pathscan.path_digest())
    discover_services(remember_in=state)
    assert scans.count == 2


def test_nothing_is_written_where_others_may_write(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    pathscan.remember_absent(shared, pathscan.path_digest())
    assert os.listdir(shared) == []
    pathscan.remember_absent(tmp_path / "missing", pathscan.path_digest())
    assert not (tmp_path / "missing").exists()  # a read command never creates it


def test_an_entry_that_cannot_be_looked_at_is_no_error(fake_dists: FakeDists, state: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Another user's ``*.dist-info`` directory (mode 0700) cannot be looked into: its
    ``entry_points.txt`` is neither read nor counted by importlib.metadata, and is no
    traceback here; once it can be looked at, the digest changes."""
    fake_dists.dist("private-tool", {})
    hidden = str(fake_dists.root / "private_tool-1.0.dist-info" / "entry_points.txt")
    real_stat = os.stat

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path) == hidden:
            raise PermissionError(13, "Permission denied", hidden)
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    denied = pathscan.path_digest()
    assert pathscan.path_digest() == denied
    assert discover_services(remember_in=state).operations == {}
    assert pathscan.known_absent(state, denied)
    monkeypatch.setattr(os, "stat", real_stat)
    assert pathscan.path_digest() != denied
