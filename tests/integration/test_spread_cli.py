"""``cronctl spread`` through the CLI: its counts are the fires ``cronctl next`` lists for
the same jobs and window; the JSON shape; one-line errors."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cronctl.cli.app import main

KINDS = (
    ('cron = "H * * * * *"', ""),
    ('cron = "H H * * * *"', ""),
    ('cron = "H/10 * * * * *"', ""),
    ('cron = "H(0-9) H/5 * * * *"', 'timezone = "America/New_York"\n'),
    ('every = "7s"', ""),
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "jobs.d").mkdir()
    tables = []
    for n in range(50):
        schedule, extra = KINDS[n % len(KINDS)]
        tables.append(f'[jobs.job-{n:02d}]\n{schedule}\n{extra}command = ["true"]\n')
    tables.append('[jobs.off]\ncron = "* * * * * *"\nenabled = false\ncommand = ["true"]\n')
    (tmp_path / "jobs.d" / "many.toml").write_text("\n".join(tables))
    (tmp_path / "cronctl.toml").write_text('[scheduler]\ndatabase = "none"\n')
    return tmp_path


def spread(capsys: pytest.CaptureFixture[str], project: Path, *args: str) -> dict[str, Any]:
    code, out, err = run(capsys, "-c", str(project / "cronctl.toml"), "spread", "--json",
                         *args)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_counts_are_the_fires_next_lists(project: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    doc = spread(capsys, project, "--window", "1h")
    assert set(doc) == {"window", "from", "until", "jobs", "fires", "peak", "busiest"}
    assert doc["window"] == "1h" and doc["jobs"] == 50  # the disabled job is not counted
    start = datetime.fromisoformat(doc["from"])
    until = datetime.fromisoformat(doc["until"])
    assert (until - start).total_seconds() == 3600
    seconds: Counter[str] = Counter()
    by_job: dict[str, set[str]] = {}
    for n in range(50):
        job = f"job-{n:02d}"
        code, out, err = run(capsys, "-c", str(project / "cronctl.toml"), "next", job,
                             "--from", doc["from"], "-n", "1000", "--json")
        assert code == 0, err
        fires = [f["utc"] for f in json.loads(out)["fires"]
                 if datetime.fromisoformat(f["utc"]) <= until]
        assert len(fires) < 1000  # the whole hour was listed
        seconds.update(fires)
        by_job[job] = set(fires)
    assert doc["fires"] == sum(seconds.values())
    ranked = sorted(seconds.items(), key=lambda p: (-p[1], p[0]))[:10]
    assert [(b["at"], b["fires"]) for b in doc["busiest"]] == ranked
    peak = doc["peak"]
    assert (peak["at"], peak["fires"]) == ranked[0]
    assert peak["jobs"] == sorted(j for j, fires in by_job.items() if peak["at"] in fires)


def test_plain_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-c", str(project / "cronctl.toml"), "spread")
    assert code == 0 and err == ""
    assert out.startswith("window:  24h: ")
    assert "jobs:    50" in out and "peak:    " in out
    assert "BUSIEST SECOND (UTC)  FIRES" in out


def test_no_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cronctl.toml").write_text('[scheduler]\ndatabase = "none"\n')
    doc = spread(capsys, tmp_path)
    assert (doc["jobs"], doc["fires"], doc["peak"], doc["busiest"]) == (0, 0, None, [])


@pytest.mark.parametrize(("window", "needle"), [
    ("0", "--window"), ("40d", "31d"), ("soon", "not a duration"), ("-1h", "--window")])
def test_bad_window_is_one_line(project: Path, capsys: pytest.CaptureFixture[str],
                                window: str, needle: str) -> None:
    code, out, err = run(capsys, "-c", str(project / "cronctl.toml"), "spread",
                         f"--window={window}")
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, err


def test_violations_exit_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "jobs.d" / "bad.toml").write_text(
        '[jobs.bad]\ncron = "H(5-1) * * * *"\ncommand = ["true"]\n')
    code, out, err = run(capsys, "-c", str(project / "cronctl.toml"), "spread", "--json")
    assert code == 1 and out == ""
    assert "minute field: H(5-1) is a descending range" in err
    assert "Traceback" not in err
