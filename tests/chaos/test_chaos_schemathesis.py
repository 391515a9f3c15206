"""schemathesis at length against a real ``cronctl serve`` beside a real ``cronctl run``
(the short run is in tests/integration/test_serve_contract.py): its default number of
examples per operation and every phase, GET with a read token, then every method with an
operate token, fixed seeds. ``make chaos`` runs it (``CRONCTL_CHAOS_SECONDS`` set);
``make test`` leaves it to the short run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "integration"))
from serve_support import (  # noqa: E402  (the shared project of the serve tests)
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

pytestmark = [pytest.mark.slow, pytest.mark.chaos]
EXAMPLES = 100  # schemathesis's default
SEEDS = (27, 4242)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    if not os.environ.get("CRONCTL_CHAOS_SECONDS"):
        pytest.skip("the long schemathesis run is for make chaos; make test runs "
                    "tests/integration/test_serve_contract.py")
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


@pytest.mark.timeout(1000)
@pytest.mark.parametrize("seed_value", SEEDS)
@pytest.mark.parametrize(("token", "get_only"), [(READ_TOKEN, True), (OPERATE_TOKEN, False)],
                         ids=["read-GET", "operate-all"])
def test_schemathesis_at_length_finds_no_failure(server: Server, tmp_path: Path, token: str,
                                                 get_only: bool, seed_value: int) -> None:
    done = schemathesis(server, token, tmp_path, seed=seed_value, max_examples=EXAMPLES,
                        get_only=get_only, timeout=900)
    summary = done.stdout.splitlines()[-1] if done.stdout else "(no output)"
    print(f"schemathesis seed {seed_value} {'GET' if get_only else 'all'}: {summary}")
    assert done.returncode == 0, f"{summary}\n{done.stdout[-20000:]}\n{done.stderr}"
    assert "failure" not in summary, done.stdout[-20000:]
