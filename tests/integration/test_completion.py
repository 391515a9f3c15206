"""Shell completion (bash, zsh, fish) through the real entry point: commands, options,
and the job ids of the current configuration; a broken configuration completes nothing
instead of printing an error into the shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

JOBS = '[jobs.nightly-report]\nevery = "1h"\ncommand = ["true"]\n\n' \
       '[jobs.nightly-cleanup]\nevery = "1h"\ncommand = ["true"]\n\n' \
       '[jobs.hourly]\nevery = "1h"\ncommand = ["true"]\n'


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "jobs.d").mkdir()
    (tmp_path / "jobs.d" / "a.toml").write_text(JOBS)
    path = tmp_path / "cronctl.toml"
    path.write_text('[scheduler]\ndatabase = "none"\n')
    return path


def complete(shell: str, words: str, cwd: Path, cword: int | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONCTL_")}
    env["_CRONCTL_COMPLETE"] = f"complete_{shell}"
    if shell == "bash":
        env["COMP_WORDS"] = words
        env["COMP_CWORD"] = str(cword if cword is not None else len(words.split()) - (
            0 if words.endswith(" ") else 1))
    else:
        env["_TYPER_COMPLETE_ARGS"] = words
        env["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
    out = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'cronctl'; "
                          "from cronctl.cli.app import main; main()"],
                         env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out.stdout


def test_commands_and_job_ids_complete_in_every_shell(config: Path) -> None:
    cwd = config.parent
    assert "trigger" in complete("bash", "cronctl tr", cwd).split()
    assert complete("bash", "cronctl trigger nightly", cwd).split() == [
        "nightly-cleanup", "nightly-report"]
    assert "nightly-report" in complete("zsh", "cronctl why nightly-r", cwd)
    assert complete("fish", "cronctl logs --job hou", cwd).split() == ["hourly"]
    assert "--since" in complete("bash", "cronctl history --si", cwd).split()


def test_a_broken_configuration_completes_nothing(config: Path) -> None:
    config.write_text("[[")
    assert complete("bash", "cronctl trigger ", config.parent).split() == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_a_script(shell: str) -> None:
    # In a terminal the shell is detected from the process tree; a test has no login
    # shell above it, so it names the shell (typer's switch for exactly that).
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    cronctl = str(Path(sys.executable).with_name("cronctl"))
    out = subprocess.run([cronctl, "--show-completion", shell], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "_CRONCTL_COMPLETE" in out.stdout, out.stderr


@pytest.mark.parametrize(("shell", "marker"), [
    ("bash", "complete -o default -F _cronctl_completion cronctl"),
    ("zsh", "#compdef cronctl"),
    ("fish", "complete --command cronctl"),
    ("powershell", "Register-ArgumentCompleter"),
])
def test_show_completion_honours_the_shell_named(shell: str, marker: str,
                                                 tmp_path: Path) -> None:
    """Issue 24: `--show-completion zsh|fish|powershell` all printed the bash script."""
    out = subprocess.run([sys.executable, "-m", "cronctl", "--show-completion", shell],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert marker in out.stdout, out.stdout[:300]
    others = {"bash": "complete -o default", "zsh": "#compdef", "fish": "complete --command"}
    assert not any(m in out.stdout for s, m in others.items() if s != shell)


def test_show_completion_refuses_an_unknown_shell(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "cronctl", "--show-completion", "nosuchshell"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("error: --show-completion: unknown shell 'nosuchshell'; one of bash, "
                          "zsh, fish, powershell, pwsh\n")


def test_enumerated_options_complete_their_values(config: Path) -> None:
    cwd = config.parent
    assert complete("bash", "cronctl run --log-format ", cwd).split() == ["text", "json"]
    assert complete("bash", "cronctl run --log-format j", cwd).split() == ["json"]
    # --status takes a comma-separated list: the last word completes, given ones drop out
    assert complete("bash", "cronctl history --status dead", cwd).split() == ["dead_letter"]
    assert complete("bash", "cronctl history --status failed,s", cwd).split() == [
        "failed,succeeded", "failed,skipped"]
    assert "Europe/Helsinki" in complete("bash", "cronctl next 1h --tz Europe/Hel", cwd).split()
    assert "America/New_York" in complete(
        "bash", "cronctl import-crontab x --tz America/New", cwd).split()
