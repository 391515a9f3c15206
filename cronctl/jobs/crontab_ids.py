"""The job ids ``cronctl import-crontab`` gives converted lines: readable, from what each
command runs, and unique.

A script names its job (``/usr/local/bin/backup.sh --full`` is ``backup``). A common
tool does not: ids from the first word alone were ``echo``, ``echo-2``, ``find``, which
say nothing in ``cronctl list``; the tool's id takes its first meaningful argument along
(``find /var/log -delete`` is ``find-log``, ``curl https://hc.example/ping`` is
``curl-hc.example``), and a tool with subcommands its subcommand too
(``systemctl restart nginx`` is ``systemctl-restart-nginx``). Pure: no files.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from urllib.parse import urlsplit

ID_MAX = 60
_ARGUMENT_MAX = 24  # the argument part of a tool's id
_WRAPPERS = frozenset({"nice", "ionice", "nohup", "exec", "env", "sudo", "time", "chronic",
                       "timeout", "setsid", "stdbuf", "command", "if", "then", "else", "do",
                       "!"})
_RUNNERS = frozenset({"sh", "bash", "dash", "zsh", "python", "python3", "perl", "php", "ruby",
                      "node", "run-parts"})
_SKIP = frozenset({"cd", "test", "[", "[[", "true", ":"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "{", "}"})
_REDIRECTIONS = frozenset({">", ">>", "<", "<<", ">&", "<&", "&>", "&>>", ">|"})
# Tools whose name says little about the job: their id takes an argument along.
_TOOLS = frozenset({
    "echo", "printf", "find", "rm", "du", "df", "tar", "gzip", "zip", "rsync", "cp", "mv",
    "curl", "wget", "date", "touch", "mkdir", "ls", "cat", "grep", "sed", "awk", "kill",
    "pkill", "killall", "mysqldump", "pg_dump", "pg_dumpall", "psql", "mysql", "sqlite3",
    "logger", "mail", "sleep", "ping", "truncate", "chmod", "chown", "ln", "xargs", "tee",
    "sync", "flock", "wc", "sort", "head", "tail", "nc", "ssh", "scp", "restic", "borg",
    "logrotate", "updatedb", "fstrim", "ntpdate", "hwclock", "wall",
})
# Tools whose first argument is a subcommand: the id takes two arguments.
_SUBCOMMAND_TOOLS = frozenset({
    "systemctl", "service", "docker", "podman", "git", "apt", "apt-get", "yum", "dnf",
    "certbot", "kubectl", "make", "npm", "composer", "redis-cli", "journalctl", "snap",
})


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a command line, without leading ``VAR=value`` words."""
    segments: list[list[str]] = [[]]
    for word in _words(command):
        if word in _SEPARATORS:
            segments.append([])
        elif not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word) or segments[-1]:
            segments[-1].append(word)
    return segments


def _arguments(words: list[str]) -> list[str]:
    """The arguments that may name what a tool works on: up to the first redirection,
    without options, numbers and what a redirection names."""
    out: list[str] = []
    for word in words:
        if word in _REDIRECTIONS or word.endswith((">", "<")):
            break
        if word.startswith(("-", "+")) or word.isdigit():
            continue
        out.append(word)
    return out


def _argument_name(word: str) -> str:
    """What an argument says: a URL's host, a path's last part, else the word."""
    if "://" in word:
        host = urlsplit(word).hostname
        if host:
            return host
    # a path's last part that says something (/tmp/cache/* is "cache")
    for part in reversed(word.split("/")):
        name = _cleaned(part)[:_ARGUMENT_MAX].rstrip("-._")
        if name:
            return name
    return ""


def derive_id(command: str) -> str:
    """A readable id from what the command runs: ``/usr/local/bin/backup.sh --full`` is
    ``backup``; ``cd /srv && php artisan schedule:run`` is ``artisan``; ``run-parts
    /etc/cron.daily`` is ``cron.daily``; ``find /var/log -delete`` is ``find-log``."""
    for segment in _segments(command):
        words = [w for w in segment if not w.startswith("-") and not w.isdigit()]
        while words and words[0] in _WRAPPERS:
            words = words[1:]
        if not words or words[0] in _SKIP:
            continue
        start = segment.index(words[0])
        if len(words) > 1 and words[0].rsplit("/", 1)[-1] in _RUNNERS:
            words = words[1:]
            start = segment.index(words[0], start + 1)
        program = words[0].rstrip("/").rsplit("/", 1)[-1]
        base = clean(program)
        wanted = 2 if program in _SUBCOMMAND_TOOLS else 1 if program in _TOOLS else 0
        names = [name for name in map(_argument_name, _arguments(segment[start + 1:]))
                 if name][:wanted]
        return "-".join([base, *names])[:ID_MAX].rstrip("-._") or "job"
    return "job"


def _cleaned(name: str) -> str:
    name = re.sub(r"\.(sh|bash|py|pl|php|rb|js)$", "", name)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._")
    return name[:ID_MAX].rstrip("-._")


def clean(name: str) -> str:
    """``name`` as an id: a script's extension dropped, other characters made ``-``."""
    return _cleaned(name) or "job"


def unique_id(base: str, used: Collection[str]) -> str:
    """``base``, or ``base-2``, ``base-3``, ... when taken."""
    if base not in used:
        return base
    n = 2
    while f"{base}-{n}" in used:
        n += 1
    return f"{base}-{n}"
