"""schemathesis (a tool nobody here wrote) against a real ``cronctl serve`` beside a real
``cronctl run`` on a SQLite project: the OpenAPI document is the API's contract, so
every check passes. Reads with a read token (GET only), then every method with an
operate token; a fixed seed, few examples (the long run is tests/chaos/
test_chaos_schemathesis.py). What a failure looks like and the command that reproduces
it are in the output shown."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_support import (
    OPERATE_TOKEN,
    READ_TOKEN,
    Project,
    Server,
    make_project,
    quick_jobs,
    schemathesis,
    seed,
    start_scheduler,
    start_server,
)

pytestmark = pytest.mark.slow
SEED = 27


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    project = make_project(tmp_path_factory.mktemp("schemathesis"))
    quick_jobs(project)
    seed(project)
    scheduler = start_scheduler(project)
    yield project
    scheduler.terminate()
    scheduler.wait(timeout=20)


@pytest.fixture(scope="module")
def server(project: Project) -> Iterator[Server]:
    server = start_server(project)
    yield server
    server.stop()


def failures(done: subprocess.CompletedProcess[str]) -> str:
    """The run's summary line (``N failures`` / ``N passed``) and the output, for the
    assertion message."""
    last = [line for line in done.stdout.splitlines() if re.match(r"=+ .* in [0-9.]+s =+$",
                                                                   line)]
    return f"{last[-1] if last else '(no summary)'}\n{done.stdout[-20000:]}\n{done.stderr}"


@pytest.mark.parametrize(("token", "get_only"), [(READ_TOKEN, True), (OPERATE_TOKEN, False)],
                         ids=["read-GET", "operate-all"])
def test_schemathesis_finds_no_failure(server: Server, tmp_path: Path, token: str,
                                       get_only: bool) -> None:
    done = schemathesis(server, token, tmp_path, seed=SEED, max_examples=3,
                        get_only=get_only, timeout=120)
    assert done.returncode == 0, failures(done)
    assert "failure" not in done.stdout.splitlines()[-1], failures(done)
