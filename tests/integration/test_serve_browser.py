"""The dashboard in a real browser (Debian's chromium, driven by Playwright) against a real
``cronctl serve`` and a real ``cronctl run`` on a seeded SQLite database: every page
loads, works without JavaScript, fits 1280 and 390 pixels in light and dark; an operate
token logs in, runs a job, follows its log live and cancels it; a form without its CSRF
token is refused. Screenshots go to ``$CRONCTL_TEST_ARTIFACTS`` (default
``tests/artifacts/``, ignored by git)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from serve_support import (
    OPERATE_TOKEN,
    READ_TOKEN,
    Project,
    Server,
    make_project,
    seed,
    start_server,
)

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("CRONCTL_TEST_ARTIFACTS",
                                Path(__file__).resolve().parents[1] / "artifacts"))
PAGES = {"jobs": "/", "job": "/jobs/backup?at=2h", "status": "/status"}


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


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    _browser_or_skip()
    project = make_project(tmp_path_factory.mktemp("dash"))
    seed(project)
    return project


@pytest.fixture(scope="module")
def scheduler(project: Project) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([sys.executable, "-m", "cronctl", "-c", str(project.config),
                                "run"], cwd=project.root, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = project.cli("status", "--json")
        if done.returncode == 0 and json.loads(done.stdout)["nodes"]:
            break
        assert process.poll() is None, process.communicate()[1]
        time.sleep(0.3)
    else:
        process.kill()
        raise AssertionError("cronctl run did not register within 30 s")
    yield process
    process.terminate()
    try:
        process.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


@pytest.fixture(scope="module")
def server(project: Project, scheduler: subprocess.Popen[str]) -> Iterator[Server]:
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


def _shots() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def _login(page: Any, server: Server, token: str) -> None:
    page.goto(server.base + "/")
    assert "/login" in page.url  # a page asks for the token first
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(server.base + "/")


def _errors(page: Any) -> list[str]:
    found: list[str] = []
    page.on("console", lambda m: found.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: found.append(str(e)))
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_fits_and_renders(browser: Any, server: Server, project: Project,
                                     width: int, scheme: str) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  color_scheme=scheme)
    page = context.new_page()
    errors = _errors(page)
    page.goto(server.base + "/status")
    assert "/login?next=%2Fstatus" in page.url
    page.screenshot(path=str(_shots() / f"login-{width}-{scheme}.png"), full_page=True)
    _login(page, server, OPERATE_TOKEN)
    pages = {**PAGES, "execution": f"/executions/{project.seeded['backup_last']}"}
    for name, path in pages.items():
        response = page.goto(server.base + path)
        assert response is not None and response.status == 200, path
        page.screenshot(path=str(_shots() / f"{name}-{width}-{scheme}.png"), full_page=True)
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= width, f"{path} is {overflow}px wide at {width}px"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(13, 17, 23)") == (scheme == "dark")
    assert errors == []
    context.close()


def test_jobs_page_shows_next_fire_status_and_a_strip_of_why_links(
        browser: Any, server: Server) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    _login(page, server, READ_TOKEN)
    rows = page.locator("li.job")
    assert rows.count() == 4
    backup = page.locator("li.job", has=page.get_by_role("link", name="backup", exact=True))
    # (every 10 minutes: a page rendered in the 2 s before one says "just now")
    nxt = backup.locator(".job-next time")
    ahead = (datetime.fromisoformat(nxt.get_attribute("datetime") or "")
             - datetime.now(UTC)).total_seconds()
    text = nxt.inner_text()
    assert text.startswith("in ") or (text == "just now" and ahead < 3), (text, ahead)
    assert backup.locator(".job-last").inner_text() in ("succeeded", "failed")
    cells = backup.locator(".strip .cell")
    assert cells.count() == 48
    ran = backup.locator(".strip a.cell.s-ran").first
    assert backup.locator(".strip a.cell.s-failed").count() >= 1
    assert backup.locator(".strip a.cell.s-missed").count() >= 1
    # a read token sees no buttons; the strip's link explains that instant
    assert page.get_by_role("button", name="Run now").count() == 0
    ran.click()
    assert "/jobs/backup?at=" in page.url
    verdict = page.locator(".verdict")
    assert verdict.locator("strong.st").inner_text() == "ran"
    assert "succeeded" in verdict.inner_text()
    context.close()


def test_job_page_why_form_history_and_dst_notes_without_javascript(
        browser: Any, server: Server) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    _login(page, server, READ_TOKEN)
    page.goto(server.base + "/jobs/report")
    page.locator("#at").fill("2026-03-08T02:30")  # inside New York's DST gap
    page.get_by_role("button", name="Explain").click()
    assert "at=2026-03-08T02" in page.url
    assert "2026-03-08" in page.locator(".verdict").inner_text()
    assert page.locator(".fires li").count() == 10
    page.goto(server.base + "/jobs/backup")
    assert page.locator("#hist-h + .scroll tbody tr").count() == 25
    page.get_by_role("link", name="Older →").click()
    assert "cursor=" in page.url and page.locator("#hist-h + .scroll tbody tr").count() >= 1
    skips = page.locator("#skips-h + .scroll tbody")
    assert "overlap" in skips.inner_text() and "misfire" in skips.inner_text()
    context.close()


def test_run_now_follow_the_live_log_and_cancel(browser: Any, server: Server,
                                                project: Project) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = _errors(page)
    _login(page, server, OPERATE_TOKEN)
    page.goto(server.base + "/jobs/sync")
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url("**/executions/*")
    execution_id = int(page.url.split("/executions/")[1].split("?")[0])
    assert "started" in page.locator(".notice").inner_text()
    log = page.locator("#log")
    # lines arrive while the page stays open: the progressive script appends them
    deadline = time.monotonic() + 30
    while page.locator("#log .ln").count() < 4:  # the page's CSP forbids eval'd waits
        assert time.monotonic() < deadline, "no live log lines within 30 s"
        page.wait_for_timeout(250)
    assert page.locator("#live-note").inner_text() == "following live"
    assert "line 1" in log.inner_text()
    page.screenshot(path=str(_shots() / "live-log-1280-light.png"), full_page=True)
    page.get_by_role("button", name="Cancel").click()
    assert "cancel requested" in page.locator(".notice").inner_text()
    expect(page.locator("#exec-status .st")).to_have_text("cancelled", timeout=30_000)
    expect(page.locator("#live-note")).to_have_text(re.compile("^finished"), timeout=10_000)
    assert page.get_by_role("button", name="Cancel").count() == 0
    page.screenshot(path=str(_shots() / "cancelled-1280-light.png"), full_page=True)
    assert errors == []
    context.close()
    # (by id: the newest row need not be this run's)
    records = json.loads(project.cli("history", "sync", "--json").stdout)["executions"]
    record = next(r for r in records if r["id"] == execution_id)
    assert (record["status"], record["origin"]) == ("cancelled", "manual")
    audit = json.loads(project.cli("audit", "--json").stdout)["audit"]
    done = {(r["actor"], r["action"], r["target"], r["status"]) for r in audit}
    assert ("ops", "trigger", "sync", 200) in done
    assert ("ops", "cancel", str(execution_id), 200) in done


def test_a_form_post_without_its_csrf_token_is_refused(browser: Any, server: Server) -> None:
    context = browser.new_context()
    page = context.new_page()
    _login(page, server, OPERATE_TOKEN)
    response = page.request.post(server.base + "/jobs/report/pause",
                                 form={"csrf": "forged.0000"})
    assert response.status == 403
    assert "CSRF" in response.text()
    response = page.request.post(server.base + "/api/v1/jobs/report/pause")
    assert response.status == 403  # the cookie alone is not enough, on the API too
    paused = json.loads(page.request.get(server.base + "/api/v1/jobs/report").text())["paused"]
    assert paused is False
    context.close()


def test_keyboard_focus_is_visible_and_the_skip_link_comes_first(browser: Any,
                                                                 server: Server) -> None:
    context = browser.new_context()
    page = context.new_page()
    _login(page, server, OPERATE_TOKEN)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    context.close()


def test_api_trigger_and_cancel_answer_the_cli_documents(server: Server,
                                                         project: Project) -> None:
    def trigger_cancel(via_api: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        if via_api:
            status, _, started = server.request("POST", "/api/v1/jobs/sync/trigger",
                                                token=OPERATE_TOKEN)
            assert status == 200, started
            status, _, cancelled = server.request(
                "POST", f"/api/v1/executions/{started['execution_id']}/cancel",
                token=OPERATE_TOKEN)
            assert status == 200, cancelled
            return started, cancelled
        done = project.cli("trigger", "sync", "--json")
        assert done.returncode == 0, done.stderr
        started = json.loads(done.stdout)
        done = project.cli("cancel", str(started["execution_id"]), "--json")
        assert done.returncode == 0, done.stderr
        return started, json.loads(done.stdout)

    def shape(doc: dict[str, Any]) -> list[dict[str, Any]]:
        varying = ("id", "occurrence_id", "scheduled_at", "started_at", "finished_at", "status")
        return [{k: v for k, v in e.items() if k not in varying} for e in doc["executions"]]

    api_doc, api_cancel = trigger_cancel(via_api=True)
    time.sleep(3)  # the cancelled run ends (SIGTERM) before the next manual run
    cli_doc, cli_cancel = trigger_cancel(via_api=False)
    assert set(api_doc) == set(cli_doc) == {"job", "request", "queued", "execution_id",
                                           "chained"}
    assert api_doc["chained"] == cli_doc["chained"] == []  # --chain: a CLI option only
    assert (api_doc["job"], api_doc["queued"]) == (cli_doc["job"], cli_doc["queued"])
    assert shape(api_cancel) == shape(cli_cancel)
    assert [e["id"] for e in api_cancel["executions"]] == [api_doc["execution_id"]]
    assert api_cancel["executions"][0]["cancel_requested"] is True
    status, _, problem = server.request("POST", "/api/v1/jobs/nope/trigger", token=OPERATE_TOKEN)
    assert status == 404 and problem["detail"] == project.cli(
        "trigger", "nope").stderr.strip().removeprefix("error: ")
