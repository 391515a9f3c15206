"""Every command has help text and is documented in the man page, and every
``[scheduler]`` key of the config is documented in cronctl.toml(5)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main

from cronctl.cli.app import _register_commands, app

ROOT = Path(__file__).resolve().parents[3]


def _commands() -> dict[str, Any]:
    _register_commands()
    group: Any = typer.main.get_command(app)
    found: dict[str, Any] = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group such as "db"
            for sub, subcommand in command.commands.items():
                found[f"{name} {sub}"] = subcommand
        else:
            found[name] = command
    return found


def _man_text(name: str) -> str:
    # roff escapes "-" as "\-"; the page is compared in plain text.
    return (ROOT / "man" / name).read_text().replace("\\-", "-").replace("\\fB", "").replace(
        "\\fR", "").replace("\\fI", "")


def test_every_command_has_help() -> None:
    commands = _commands()
    assert len(commands) >= 12
    for name, command in commands.items():
        assert (command.help or "").strip(), f"cronctl {name} has no help text"


def test_every_command_is_in_the_man_page() -> None:
    man = _man_text("cronctl.1")
    for name in _commands():
        assert re.search(rf"^\.B {re.escape(name)}\b", man, re.MULTILINE), (
            f"cronctl {name} is not documented in man/cronctl.1"
        )


def test_every_command_has_its_own_entry_in_the_man_page() -> None:
    """Issue 24: a stray `.B db upgrade` line folded `prune` into the `db upgrade` entry
    (man showed both names over prune's text). Each command's `.B` line opens its own
    `.TP` entry, and no entry names two commands."""
    man = _man_text("cronctl.1")
    lines = man.splitlines()
    names = sorted(_commands(), key=len, reverse=True)
    heads: list[str] = []
    for i, line in enumerate(lines):
        name = next((n for n in names if re.match(rf"\.B {re.escape(n)}\b", line)), None)
        if name is None:
            continue
        heads.append(name)
        assert lines[i - 1] == ".TP", f"'.B {name}' does not open a .TP entry of its own"
    assert sorted(heads) == sorted(_commands()), "each command exactly once"


def test_the_readme_tour_uses_the_jobs_init_writes() -> None:
    """Issue 24: the tour's `cronctl cancel 7` could not work: the starter job was an
    `echo`. Every job the tour names is one `cronctl init` writes, and the one it cancels
    runs long enough to be cancelled by hand."""
    from cronctl.cli.cmd_init import starter

    readme = (ROOT / "README.md").read_text()
    tour = readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    commands = [line.split("#", 1)[0].split() for line in tour.splitlines()
                if line.startswith("cronctl ")]
    jobs = starter(None)[1]["jobs"]
    named = {c[2] for c in commands if c[1] in ("next", "trigger", "why", "replay", "logs")
             and len(c) > 2 and not c[2].startswith(("-", "'"))}
    named |= {c[3] for c in commands if c[1] == "logs" and c[2] == "--job"}
    assert named and named <= set(jobs), named
    cancelled = [c for c in commands if c[1] == "cancel"]
    assert cancelled, "the tour shows cancel"
    started = [c[2] for c in commands if c[1] == "trigger" and "--wait" not in c]
    assert started, "the tour starts a job without waiting for it, to cancel it"
    for job in started:
        argv = jobs[job]["command"]
        assert argv[0] == "sleep" and int(argv[1]) >= 60, argv


def test_every_scheduler_key_is_in_the_file_format_page() -> None:
    from cronctl import config

    man = _man_text("cronctl.toml.5")
    for key in config.SCHEDULER_KEYS:
        assert f".B {key}" in man, f"[scheduler] {key} is not documented in cronctl.toml(5)"


def _man_entry(man: str, name: str) -> str:
    """The man page text of one command: from its ``.B name`` line to the next command."""
    match = re.search(rf"^\.B {re.escape(name)}\b.*?(?=^\.TP\n\.B |^\.SH |\Z)", man,
                      re.MULTILINE | re.DOTALL)
    assert match is not None, f"cronctl {name} is not documented in man/cronctl.1"
    return match.group(0)


def test_every_option_of_every_command_is_in_its_man_entry() -> None:
    man = _man_text("cronctl.1")
    global_names = {"--config", "-c", "--database", "--jobs-dir", "--verbose", "-v",
                    "--quiet", "-q", "--no-color", "--help", "-h"}
    missing: list[str] = []
    for name, command in _commands().items():
        entry = _man_entry(man, name)
        for param in command.params:
            for opt in [*param.opts, *param.secondary_opts]:
                if not opt.startswith("-") or opt in global_names:
                    continue
                if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", entry):
                    missing.append(f"cronctl {name} {opt}")
    assert missing == [], "not in man/cronctl.1: " + ", ".join(missing)


def test_global_options_are_in_the_man_page() -> None:
    man = _man_text("cronctl.1")
    for opt in ("--config", "-c", "--database", "--jobs-dir", "--verbose", "-v", "--quiet",
                "-q", "--no-color", "--version"):
        assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", man), opt


def test_every_retention_key_is_in_the_file_format_page() -> None:
    from cronctl import config

    man = _man_text("cronctl.toml.5")
    assert ".SS [retention]" in man
    section = man.split(".SS [retention]", 1)[1].split(".SH", 1)[0]
    for key in config.RETENTION_KEYS:
        assert f".B {key}" in section, f"[retention] {key} is not documented in cronctl.toml(5)"
