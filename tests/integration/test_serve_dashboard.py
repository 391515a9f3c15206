"""The landing page in a real browser (Debian's chromium, driven by Playwright) against a
real ``cronctl serve`` on a SQLite database seeded through the store: a failing, a
retrying, a late and a healthy job lead with what needs attention; the page updates
itself (a new execution appears without a reload) and asks for nothing while the tab
is hidden; the search and state filter work with and without JavaScript; one bad job
file (issue 39 item 1) shows as an error above the valid jobs instead of "No jobs".
Screenshots at 1400x900 and 390x844 go to ``$CRONCTL_TEST_ARTIFACTS`` (default
``tests/artifacts/``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from serve_support import OPERATE_TOKEN, Project, Server, make_project, start_server

from cronctl.ids import occurrence_id
from cronctl.jobs.model import ExecutionStatus, Origin
from cronctl.store import open_store

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("CRONCTL_TEST_ARTIFACTS",
                                Path(__file__).resolve().parents[1] / "artifacts"))
JOBS = """\
[jobs.healthy]
every = "10m"
command = ["true"]
description = "Ships the logs"

[jobs.failing]
every = "10m"
command = ["false"]
max_attempts = 1
description = "Nightly export to the warehouse"

[jobs.late]
every = "1m"
command = ["true"]
late_after = "2m"
description = "Queue drain"

[jobs.retrying]
every = "10m"
command = ["false"]
max_attempts = 3
retry_backoff = "1h"
"""
TYPO = """\
[jobs.typo]
command = ["true"]
cron = "0 25 * * *"
"""


def _browser_or_skip() -> None:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip)")
    if missing:
        reason = "no browser: " + ", ".join(missing)
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason)
        pytest.skip(reason)


class Seeder:
    def __init__(self, project: Project) -> None:
        self.store = open_store(project.url, node_id="node-a")

    def run(self, job: str, at: datetime, status: ExecutionStatus, error: str | None = None,
            attempt: int = 1, took: float = 4.0) -> int:
        eid = self.store.try_insert_execution(
            job_id=job, occurrence_id=occurrence_id(job, at), scheduled_at=at,
            attempt=attempt, origin=Origin.CRON, node_id="node-a", scope_node="node-a",
            target="command: true")
        assert eid is not None
        if status is ExecutionStatus.PENDING:
            return eid
        begun = at + timedelta(seconds=1)
        self.store.transition(eid, ExecutionStatus.PENDING, ExecutionStatus.RUNNING,
                              started_at=begun)
        self.store.transition(eid, ExecutionStatus.RUNNING, status, error=error,
                              finished_at=begun + timedelta(seconds=took))
        return eid


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    _browser_or_skip()
    project = make_project(tmp_path_factory.mktemp("board"))
    (project.root / "jobs.d" / "jobs.toml").write_text(JOBS)
    (project.root / "jobs.d" / "zz-typo.toml").write_text(TYPO)  # item 1: one bad file
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    slot = now - timedelta(minutes=now.minute % 10)
    seeder = Seeder(project)
    try:
        for k in range(1, 7):
            seeder.run("healthy", slot - timedelta(minutes=10 * k), ExecutionStatus.SUCCEEDED)
            seeder.run("failing", slot - timedelta(minutes=10 * k),
                       ExecutionStatus.SUCCEEDED if k > 2 else ExecutionStatus.FAILED,
                       error="Traceback (most recent call last):\n  File \"x.py\"\n"
                             "psycopg.OperationalError: connection refused" if k <= 2 else None)
        at = slot - timedelta(minutes=10)
        seeder.run("retrying", at, ExecutionStatus.FAILED, error="exit status 7: disk full")
        seeder.run("retrying", at, ExecutionStatus.PENDING, attempt=2)
        seeder.run("late", now - timedelta(minutes=15), ExecutionStatus.SUCCEEDED, took=0.4)
        seeder.store.advance_cursor("late", now - timedelta(minutes=15))
    finally:
        seeder.store.close()
    yield project


@pytest.fixture(scope="module")
def server(project: Project) -> Iterator[Server]:
    server = start_server(project)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def _login(page: Any, server: Server, path: str = "/") -> None:
    page.goto(server.base + path)
    assert "/login" in page.url
    page.get_by_label("Token").fill(OPERATE_TOKEN)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(server.base + path)


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.mark.parametrize("size", [(1400, 900), (390, 844)])
def test_the_landing_page_leads_with_what_needs_attention(browser: Any, server: Server,
                                                          size: tuple[int, int]) -> None:
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _login(page, server)
    # item 1: the bad file is named, the valid jobs are all there
    banner = page.locator("#violations")
    assert "zz-typo.toml:3" in banner.inner_text() and "25" in banner.inner_text()
    assert page.locator("li.job").count() == 4
    assert "No jobs" not in page.locator("main").inner_text()
    attention = page.locator("section.attention")
    # first on the page, before the jobs
    assert attention.bounding_box()["y"] < page.locator("ol.jobs").bounding_box()["y"]
    items = {c.get_attribute("class").split("c-")[1]: c.inner_text()
             for c in attention.locator("li.concern").all()}
    assert "connection refused" in items["failed"] and "failing" in items["failed"]
    assert "Traceback" not in items["failed"]  # the error's last line, not its first
    assert "2 failed attempts" in items["failed"]
    assert "late" in items["late"] and "not started 2m" in items["late"]
    assert "attempt 1 failed: exit status 7: disk full" in items["retrying"]
    assert "no_node" in items  # nothing runs them: no scheduler is live

    def row(job: str) -> Any:
        return page.locator(f"li.job[data-state]:has(a.name:text-is('{job}'))")

    assert row("failing").get_attribute("data-state") == "failed"
    assert row("late").get_attribute("data-state") == "late"
    assert row("healthy").get_attribute("data-state") == "ok"
    retry = row("retrying")
    assert retry.get_attribute("data-state") == "retrying"  # not a blue "pending"
    assert retry.locator(".job-last").inner_text() == "retrying"
    assert "attempt 1 failed: exit status 7" in retry.locator(".note").inner_text()
    badge = retry.locator(".job-last .st")
    assert badge.evaluate("e => getComputedStyle(e).color") != row("healthy").locator(
        ".job-last .st").evaluate("e => getComputedStyle(e).color")
    late_colour = row("late").locator(".job-last .st").evaluate(
        "e => getComputedStyle(e).backgroundColor")
    assert late_colour not in (badge.evaluate("e => getComputedStyle(e).backgroundColor"),
                               "rgba(0, 0, 0, 0)")  # late has a colour of its own
    healthy = row("healthy").locator(".job-run").inner_text()
    assert "ago" in healthy and "4.0s" in healthy and "100% ok" in healthy
    assert "67% ok" in row("failing").locator(".job-run").inner_text()  # 4 of 6
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    _shot(page, f"board-{width}.png")
    assert errors == []
    context.close()


def test_the_page_updates_itself_and_not_while_hidden(browser: Any, server: Server,
                                                      project: Project) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    # the tab's visibility, as the test says (a headless page is always "visible")
    page.add_init_script("""
        window.__hidden = false;
        Object.defineProperty(document, "visibilityState",
                              {get: () => window.__hidden ? "hidden" : "visible"});
    """)
    page.clock.install()
    _login(page, server)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if r.headers.get("x-cronctl-live")
            else None)
    page.evaluate("window.__same = 1")
    seeder = Seeder(project)
    try:
        seeder.run("late", datetime.now(UTC) - timedelta(seconds=30),
                   ExecutionStatus.FAILED, error="exit status 3: queue gone")
    finally:
        seeder.store.close()
    # hidden: the refresh timer passes and nothing is asked
    page.evaluate("window.__hidden = true; document.dispatchEvent(new Event('visibilitychange'))")
    page.clock.run_for(25_000)
    page.wait_for_timeout(2_500)  # (and the server's 2 s page cache expires meanwhile)
    assert asked == []
    # visible again: one catch-up request, and the new failure shows without a reload
    page.evaluate("window.__hidden = false; document.dispatchEvent(new Event('visibilitychange'))")
    page.clock.run_for(500)
    late = page.locator("li.job:has(a.name:text-is('late'))")
    deadline = datetime.now(UTC) + timedelta(seconds=15)
    while late.get_attribute("data-state") != "failed":
        assert datetime.now(UTC) < deadline, "the page did not update itself"
        page.wait_for_timeout(200)
    assert "queue gone" in page.locator("section.attention").inner_text()
    assert len(asked) == 1
    assert page.evaluate("window.__same") == 1  # the same document: no reload
    context.close()


def test_search_and_state_filter_with_and_without_javascript(browser: Any,
                                                             server: Server) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    _login(page, server)
    page.locator("#q").fill("warehouse")  # a description's word
    page.get_by_role("button", name="Filter").click()
    assert "q=warehouse" in page.url
    assert [a.inner_text() for a in page.locator("li.job a.name").all()] == ["failing"]
    page.goto(server.base + "/?state=retrying")
    assert [a.inner_text() for a in page.locator("li.job a.name").all()] == ["retrying"]
    context.close()
    context = browser.new_context()
    page = context.new_page()
    _login(page, server)
    page.locator("#q").fill("heal")
    visible = page.locator("li.job:visible a.name")
    assert [a.inner_text() for a in visible.all()] == ["healthy"]
    assert page.locator("#jobs-count").inner_text() == "1 of 4"
    assert "q=heal" in page.url  # a reload shows the same
    page.locator("#q").fill("")
    page.locator("#state").select_option("retrying")
    assert [a.inner_text() for a in visible.all()] == ["retrying"]
    context.close()


def test_the_status_page_keeps_attention_and_next_fires_beside_a_bad_file(
        browser: Any, server: Server) -> None:
    context = browser.new_context()
    page = context.new_page()
    _login(page, server, "/status")
    text = page.locator("main").inner_text()
    assert "zz-typo.toml:3" in text
    assert "Needs attention" in text and "failing" in text
    assert "No enabled, unpaused jobs" not in text
    assert page.locator("#next-h + .scroll tbody tr").count() == 4
    context.close()
