"""What ``--help`` and ``cronctl man`` show, through real ``cronctl`` processes (issue 39):
help text as it is written (brackets and all), descriptions not broken mid-sentence,
arguments named alike in every usage line, one description of each global option, and
a man page that is text when piped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from cronctl.cli.app import _register_commands, app

# One process prints every command's --help (the commands load as `cronctl X` loads them),
# each after a marker line; a wide terminal, so that a line of help is one line of text.
_PRINT_ALL = """
import sys
from cronctl.cli.app import main
for argv in sys.argv[1:]:
    print("=== " + argv, flush=True)
    try:
        main([*argv.split(), "--help"])
    except SystemExit:
        pass
"""


def _commands() -> dict[str, Any]:
    _register_commands()
    group: Any = typer.main.get_command(app)
    found: dict[str, Any] = {"": group}
    for name, command in group.commands.items():
        found[name] = command
        for sub, subcommand in getattr(command, "commands", {}).items():
            found[f"{name} {sub}"] = subcommand
    return found


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    names = [name for name in _commands() if name]
    env = {**os.environ, "TERMINAL_WIDTH": "400", "COLUMNS": "400", "NO_COLOR": "1"}
    run = subprocess.run([sys.executable, "-c", _PRINT_ALL, *names], capture_output=True,
                         text=True, env=env, timeout=120, check=True,
                         cwd=Path(__file__).parent)
    root = subprocess.run([sys.executable, "-m", "cronctl", "--help"], capture_output=True,
                          text=True, env=env, timeout=60, check=True).stdout
    found = {"": root}
    for chunk in run.stdout.split("=== ")[1:]:
        name, _, text = chunk.partition("\n")
        found[name] = text
    assert set(found) == {"", *names}
    return found


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_every_bracketed_word_of_every_help_text_is_shown(helps: dict[str, str]) -> None:
    """`serve --help` printed "(default:  listen, ...)": rich read `[api]` as markup."""
    missing = []
    checked = 0
    for name, command in _commands().items():
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        for text in texts:
            for bracketed in re.findall(r"\[[^\]\s][^\]]*\]", " ".join(text.split())):
                checked += 1
                if bracketed.replace("\\[", "[") not in _flat(helps[name]):
                    missing.append(f"cronctl {name}: {bracketed}")
    assert checked >= 4 and missing == []
    assert "(default: [api] listen, else 127.0.0.1:8321)" in _flat(helps["serve"])


def test_descriptions_are_not_broken_mid_sentence(helps: dict[str, str]) -> None:
    """`list`, `systemd-unit` and `db upgrade` showed their docstring's line breaks in
    `cronctl --help` ("..., calendars, next" / "fire and last status.")."""
    rows = [line.strip("│ ").split(None, 1) for line in helps[""].splitlines()
            if line.startswith("│ ")]
    described = {row[0]: row[1].strip() for row in rows if len(row) == 2}
    for name in ("list", "systemd-unit", "db", "validate", "why"):
        assert described[name].endswith("."), (name, described[name])
    assert "next fire and last status." in described["list"]
    for name in ("list", "systemd-unit", "db upgrade"):
        body = helps[name].split("Usage:", 1)[1].splitlines()
        description = [line.strip() for line in body[1:] if line.strip()][0]
        assert description.endswith("."), (name, description)


def test_usage_lines_name_arguments_alike(helps: dict[str, str]) -> None:
    """Usage lines said `{job}`, `[job]` and `{JOB}`: now JOB, or [JOB] when optional."""
    usage = {name: next(line for line in text.splitlines() if "Usage:" in line).split()
             for name, text in helps.items() if name}
    for name, words in usage.items():
        for word in words[2 + name.count(" ") + bool(name):]:
            assert not word.startswith("{") and word == word.upper(), (name, word)
    assert usage["why"][-2:] == ["JOB", "AT"]
    assert usage["history"][-1] == "[JOB]" and usage["pause"][-1] == "JOB"
    assert usage["cancel"][-1] == "[EXECUTION_ID]"


def test_database_is_described_one_way(helps: dict[str, str]) -> None:
    descriptions = set()
    for text in helps.values():
        for line in text.splitlines():
            if "--database" in line:
                descriptions.add(line.split("URL", 1)[1].strip("│ "))
    assert len(descriptions) == 1, descriptions


def test_man_piped_is_text_not_roff(tmp_path: Path) -> None:
    """`cronctl man | head` printed raw troff: rendered by `man -l`, or as plain text
    where there is no `man`."""
    env = {**os.environ}
    run = subprocess.run([sys.executable, "-m", "cronctl", "man"], capture_output=True,
                         text=True, env=env, timeout=60, check=True)
    no_man = subprocess.run([sys.executable, "-m", "cronctl", "man"], capture_output=True,
                            text=True, env={**env, "PATH": str(tmp_path)}, timeout=60,
                            check=True)
    source = subprocess.run([sys.executable, "-m", "cronctl", "man", "--source"],
                            capture_output=True, text=True, env=env, timeout=60, check=True)
    assert source.stdout.startswith(".TH CRONCTL 1")
    for text in (run.stdout, no_man.stdout):
        assert "NAME" in text and "cronctl - a cron scheduler you run as a service" in text
        assert not re.search(r"^\.[A-Z]{1,2}\b", text, re.MULTILINE), text[:300]
        assert "\\f" not in text and "\\-" not in text
