"""The command table of ``cronctl.cli.app``: every command a ``cmd_*`` module registers is
in :data:`~cronctl.cli.app.COMMANDS` under its own module, and the lazily built root
group lists and builds them all, global options included."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import typer
import typer.main

from cronctl.cli.app import COMMANDS, _CommandGroup, app

CLI = Path(__file__).resolve().parents[3] / "cronctl" / "cli"


def _registered_by(module_name: str) -> set[str]:
    holder = typer.Typer()
    holder.callback()(lambda: None)
    importlib.import_module(f"cronctl.cli.{module_name}").register(holder)
    group: Any = typer.main.get_command(holder)
    return set(group.commands)


def test_every_command_is_in_the_table_under_its_module() -> None:
    for module_name in set(COMMANDS.values()):
        names = _registered_by(module_name)
        assert names, module_name
        assert {COMMANDS[name] for name in names} == {module_name}
    assert set(COMMANDS.values()) == {p.stem for p in CLI.glob("cmd_*.py")}


def test_the_app_is_built_as_the_lazy_group() -> None:
    assert isinstance(typer.main.get_command(app), _CommandGroup)


def test_the_root_group_builds_each_command_when_asked() -> None:
    root: Any = _CommandGroup(name="cronctl")  # none registered beforehand
    ctx = root.make_context("cronctl", ["next"], resilient_parsing=True)
    assert root.list_commands(ctx)[:3] == ["validate", "list", "next"]
    for name in ("next", "resume", "db"):
        command = root.get_command(ctx, name)
        assert command is not None and command.name == name
        assert "jobs_dir" in {p.name for p in command.params}  # the global options
    upgrade = root.get_command(ctx, "db").commands["upgrade"]
    assert "jobs_dir" in {p.name for p in upgrade.params}
    assert root.get_command(ctx, "no-such-command") is None
