"""The README's calendars-and-dependencies example, run as written on SQLite by a real
``cronctl run`` (only its cron line made a 2-second interval): the extract -> transform
-> load chain runs in order at each instant, once, and ``why --json`` explains each
instant. On a day its calendar excludes (a Helsinki weekend or public holiday) the same
run must show calendar and upstream skip records instead."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_run_support import Project, open_sqlite

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
CHAIN = ("extract", "transform", "load")


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- chain-example:.*?-->\s*```toml\n(.*?)```", text, re.S)
    assert match, "the README lost its chain example"
    return match.group(1)


def _short(example: str) -> str:
    short = example.replace('cron = "0 0 6 * * *"', 'every = "2s"')
    assert short != example
    return short


def _why(project: Project, job: str, at: datetime) -> dict[str, object]:
    done = project.cli("why", job, at.isoformat(), "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def _excluded_now(project: Project) -> str | None:
    """Whether the example's calendar excludes today's Helsinki date (then nothing of
    the chain may run)."""
    from cronctl.config import load_config
    from cronctl.core.calendars import exclusion
    from cronctl.jobs import load_jobs
    from cronctl.options import GlobalOptions

    config = load_config(GlobalOptions(config=project.config))
    [extract] = [j for j in load_jobs(config.job_settings).jobs if j.id == "extract"]
    hit = exclusion(extract, datetime.now(UTC))
    return None if hit is None else hit.detail


def _run(project: Project, seconds: float) -> str:
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready" in t.lower(), 15), run.text()
        time.sleep(seconds)
    finally:
        assert run.stop() == 0, run.text()[-3000:]
    return run.text()


def test_readme_chain_runs_in_order_on_business_days(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(_short(_example()), name="etl.toml")
    excluded = _excluded_now(project)
    log = _run(project, 9)
    store = open_sqlite(project)
    try:
        runs = {job: store.list_executions(job_id=job, limit=None) for job in CHAIN}
        skips = {job: store.list_skips(job_id=job, limit=None) for job in CHAIN}
    finally:
        store.close()
    if excluded is not None:  # a weekend or a Finnish holiday in Helsinki
        assert all(runs[job] == [] for job in CHAIN), runs
        assert {s.reason for s in skips["extract"]} == {"calendar"}
        assert skips["transform"] and {s.reason for s in skips["transform"]} == {"upstream"}
        t = skips["load"][0].first_at
        doc = _why(project, "load", t)
        assert (doc["outcome"], doc["reason"]) == ("skipped", "upstream")
        assert "upstream transform@" in str(doc["detail"])
        return
    lines = (tmp_path / "etl.log").read_text().split("\n")
    order = [line.split() for line in lines if line]
    # every instant: extract, then transform, then load, each once
    instants: dict[str, list[str]] = {}
    for job, at in order:
        instants.setdefault(at, []).append(job)
    complete = [at for at, jobs in instants.items() if jobs == list(CHAIN)]
    assert len(complete) >= 2, (order, log[-3000:])
    assert all(jobs == list(CHAIN)[:len(jobs)] for jobs in instants.values()), order
    assert all(skips[job] == [] for job in CHAIN), skips
    for job in ("transform", "load"):
        assert {e.origin.value for e in runs[job]} == {"dependency"}
        occurrences = [e.occurrence_id for e in runs[job]]
        assert len(occurrences) == len(set(occurrences))  # one per instant
    for at in complete:
        when = datetime.fromisoformat(at.replace("Z", "+00:00"))
        for job in CHAIN:
            doc = _why(project, job, when)
            assert doc["outcome"] == "ran", doc
            assert doc["scheduled_at"] == at
            [execution] = doc["executions"]  # type: ignore[misc]
            origin = "cron" if job == "extract" else "dependency"
            assert execution["origin"] == origin and execution["status"] == "succeeded"


def test_a_failed_parent_skips_the_rest_of_the_chain(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    example = _short(_example()).replace('calendar = "fi-business"', "")
    failing = example.replace(
        'command = ["sh", "-c", "echo extract $CRONCTL_SCHEDULED_AT >> etl.log"]',
        'command = ["false"]\nmax_attempts = 1')
    assert failing != example
    project.jobs(failing, name="etl.toml")
    _run(project, 6)
    store = open_sqlite(project)
    try:
        failed = store.list_executions(job_id="extract", limit=None)
        transform = store.list_skips(job_id="transform", limit=None)
        load = store.list_skips(job_id="load", limit=None)
        assert store.list_executions(job_id="transform", limit=None) == []
    finally:
        store.close()
    assert failed and {e.status.value for e in failed} == {"dead_letter"}
    assert transform and {s.reason for s in transform} == {"upstream"}
    t = transform[0].first_at
    doc = _why(project, "transform", t)
    assert (doc["outcome"], doc["reason"]) == ("skipped", "upstream")
    z = t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f"skipped: upstream extract@{z} failed" in str(doc["detail"])
    assert load and all(s.detail and "upstream transform@" in s.detail
                        and "was skipped (upstream)" in s.detail for s in load)


def test_readme_why_transcript_matches(tmp_path: Path) -> None:
    """The README's ``why`` transcript for 6 December (a Finnish holiday): the skip
    records are the ones ``cronctl run`` writes (their details made by the same
    functions), and ``cronctl why`` must print the README's lines."""
    from cronctl.config import load_config
    from cronctl.core.dependencies import ParentFact, ParentState, upstream_verdict
    from cronctl.core.guards import calendar_skip
    from cronctl.jobs import load_jobs
    from cronctl.jobs.model import Origin
    from cronctl.options import GlobalOptions
    from cronctl.store import open_store
    from cronctl.store.writerecords import SkipRun

    text = README.read_text(encoding="utf-8")
    block = re.search(r"```console\n(\$ cronctl why extract 2026-12-06.*?)```", text, re.S)
    assert block, "the README lost its why transcript"
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs(_example(), name="etl.toml")
    config = load_config(GlobalOptions(config=project.config))
    jobs = {j.id: j for j in load_jobs(config.job_settings).jobs}
    t = datetime(2026, 12, 6, 4, 0, tzinfo=UTC)  # 06:00 in Helsinki
    calendar = calendar_skip(jobs["extract"], t, Origin.CRON)
    assert calendar is not None and calendar.detail is not None
    transform = upstream_verdict(jobs["transform"], t, {
        "extract": ParentFact(ParentState.SKIPPED, "calendar")}, t)
    load = upstream_verdict(jobs["load"], t, {
        "transform": ParentFact(ParentState.SKIPPED, "upstream")}, t)
    store = open_store(project.database, node_id="a")
    try:
        store.save_definitions(list(jobs.values()))
        store.record_skips([
            SkipRun("extract", "calendar", t, t, 1, "a", None, calendar.detail),
            SkipRun("transform", "upstream", t, t, 1, "a", None, transform.detail),
            SkipRun("load", "upstream", t, t, 1, "a", None, load.detail)])
    finally:
        store.close()
    lines = block.group(1).splitlines()
    for command, expected in ((lines[0], lines[1:3]), (lines[3], lines[4:6])):
        args = command.removeprefix("$ cronctl ").split()
        done = project.cli(*args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[:2] == expected
