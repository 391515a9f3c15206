"""SIGHUP applies a changed ``[notify]`` to a real ``cronctl run`` (issue 38: the webhook
of the configuration it started with kept getting every event): with two local
receivers, the events after the reload go to the new one only, with its headers and its
``on`` list; a change only a restart applies is said in the log."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from notify_support import Hook, command_events, notify_command
from test_run_support import Project

pytestmark = pytest.mark.slow

JOB = '[jobs.tick]\ncron = "0 0 3 * * *"\ncommand = ["true"]\n'


def _notify(url: str, events: str, header: str, command: Path | None = None) -> str:
    text = f'\n[notify]\non = {events}\nwebhook = "{url}"\n'
    if command is not None:
        text += f'command = ["{command}"]\n'
    return text + f'\n[notify.headers]\nX-Which = "{header}"\n'


def test_sighup_sends_the_events_to_the_new_notify_section(tmp_path: Path) -> None:
    first, second = Hook(), Hook()
    script, out = notify_command(tmp_path)
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}",
                      extra=_notify(first.url, '["succeeded"]', "one"))
    project.jobs(JOB)
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t, 20), run.text()
        assert project.cli("trigger", "tick").returncode == 0
        assert first.wait(lambda: len(first.of("succeeded")) == 1), run.text()
        # the new section: another receiver and header, a command, one more event kind
        project.write_config("node-a", 'max_concurrent_jobs = 3\n' + _notify(
            second.url, '["succeeded", "failed"]', "two", script))
        run.signal(signal.SIGHUP)
        assert run.wait_for(lambda t: "[notify] reloaded" in t), run.text()
        assert "SIGHUP: max_concurrent_jobs changed; a restart applies it" in run.text()
        assert project.cli("trigger", "tick").returncode == 0
        assert second.wait(lambda: len(second.of("succeeded")) == 1), run.text()
        assert second.headers[0]["X-Which"] == "two"
        assert first.wait(lambda: len(command_events(out)) == 1)
        assert [e["event"] for _, e in command_events(out)] == ["succeeded"]
        assert len(first.of("succeeded")) == 1, "the old webhook still got the event"
    finally:
        assert run.stop() == 0
        first.close()
        second.close()
    assert "Traceback" not in run.text()
