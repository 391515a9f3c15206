"""A SIGHUP reload of hostile job files: the log never quotes a password."""

from __future__ import annotations

import signal
from pathlib import Path

from test_run_support import Project

SECRET = "r3load-s3cret"


def test_reload_violations_are_logged_redacted(tmp_path: Path) -> None:
    project = Project(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    project.jobs('[jobs.a]\nevery = "1s"\ncommand = ["true"]\n')
    run = project.start()
    try:
        assert run.wait_for(lambda t: "ready node=" in t), run.text()
        project.jobs('[jobs.a]\nevery = "1s"\ncommand = ["true"]\n'
                     f'timezone = "postgresql://u:{SECRET}@db.example/x"\n'
                     f'env = "PGPASSWORD={SECRET}"\n')
        run.signal(signal.SIGHUP)
        assert run.wait_for(lambda t: "reload rejected" in t), run.text()
        text = run.text()
        assert "unknown time zone 'postgresql://u:***@db.example/x'" in text, text
        assert "key 'env'" in text, text
        assert SECRET not in text, text
    finally:
        assert run.stop() == 0
