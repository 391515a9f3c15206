from __future__ import annotations

from pathlib import Path

from cronctl.cli.cmd_systemd import render_unit


def test_unit_is_type_notify_with_reload_and_watchdog(tmp_path: Path) -> None:
    config = tmp_path / "cronctl.toml"
    unit = render_unit("/usr/bin/cronctl", config, "cron", tmp_path, 45, after="postgresql.service")
    lines = unit.splitlines()
    assert "Type=notify" in lines
    assert f"ExecStart=/usr/bin/cronctl --config {config} run" in lines
    assert "ExecReload=/bin/kill -HUP $MAINPID" in lines
    assert "User=cron" in lines
    assert any(line.startswith("WatchdogSec=") for line in lines)
    assert "TimeoutStopSec=45" in lines
    assert lines[lines.index("[Unit]") + 4].endswith("postgresql.service")


def test_unit_without_config_or_user() -> None:
    unit = render_unit("/opt/venv/bin/cronctl", None, None, Path("/var/lib/cronctl"), 45)
    assert "ExecStart=/opt/venv/bin/cronctl run" in unit.splitlines()
    assert "User=" not in unit
