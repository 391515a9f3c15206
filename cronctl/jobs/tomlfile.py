"""Reading one TOML file the way every cronctl file is read: ``cronctl.toml`` and each
``jobs.d/*.toml``.

Whatever the bytes are, the answer is the document or ONE violation saying what is wrong
with the file (unreadable, not UTF-8, malformed, nested too deeply), never an exception.
A UTF-8 byte-order mark, which some Windows editors write, is accepted.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cronctl.jobs.violation import Violation, display_path, one_line

# The longest string a job or config value may be (docs/behaviour.md#configuration: everything is
# bounded): a command line, a path, a description. Longer strings were read, split and
# quoted back whole (splitting a 10 MB command took over a minute).
MAX_STRING = 128 * 1024
MAX_STRING_TEXT = "128 KiB"

# Deeper than any real configuration. tomllib recurses once per level of nesting and
# raised RecursionError near 500 levels (found by fuzzing: `parameters = [[[[...]]]]`);
# what reads the document afterwards (repr in messages, JSON, copies) recurses too, so
# shallower documents that tomllib did read are refused as well.
MAX_DEPTH = 40

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True)
class TomlFile:
    """A parsed file: its text (for line numbers) and its document."""

    text: str
    data: dict[str, Any]


def read_toml(path: Path, what: str = "TOML file") -> TomlFile | Violation:
    """The file's document, or the one :class:`Violation` that says why there is none
    (``what`` names the kind of file, for "is a directory, not a job file")."""
    shown = display_path(path)
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        return Violation(shown, None, None, f"is a directory, not a {what}")
    except OSError as exc:  # permissions, dangling links, symlink loops
        return Violation(shown, None, None, f"cannot read: {exc.strerror or exc}")
    except ValueError as exc:  # a NUL in the path
        return Violation(shown, None, None, f"cannot read: {exc}")
    if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM):]
    elif raw.startswith(_UTF16_BOMS):
        return Violation(shown, None, None, "is UTF-16 text; save the file as UTF-8")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return Violation(f"{shown}:{line}", None, None,
                         f"not UTF-8 text (byte {raw[exc.start]:#04x} at offset "
                         f"{exc.start}); save the file as UTF-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = one_line(str(exc))
        found = re.search(r"line (\d+)", message)
        where = f"{shown}:{found.group(1)}" if found else shown
        return Violation(where, None, None, f"malformed TOML: {message}")
    except RecursionError:  # tomllib recurses once per level of arrays / inline tables
        return _too_deep(shown)
    if _depth(data) > MAX_DEPTH:
        return _too_deep(shown)
    if len(text) > MAX_STRING:  # (a smaller file cannot hold a longer string)
        longest = _longest_string(data)
        if longest > MAX_STRING:
            return Violation(shown, None, None,
                             f"holds a string of {longest:,} characters; at most "
                             f"{MAX_STRING_TEXT} is accepted in any value")
    return TomlFile(text, data)


def _longest_string(value: dict[str, Any]) -> int:
    """The length of the longest string (value or key) in a parsed document."""
    longest = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        for child in (item.items() if type(item) is dict else enumerate(item)):
            key, val = child
            if type(key) is str and len(key) > longest:
                longest = len(key)
            kind = type(val)
            if kind is str:
                if len(val) > longest:
                    longest = len(val)
            elif kind is dict or kind is list:
                stack.append(val)
    return longest


def _too_deep(shown: str) -> Violation:
    return Violation(shown, None, None,
                     f"nested more than {MAX_DEPTH} levels deep (arrays, inline tables or "
                     "dotted keys)")


def _depth(value: dict[str, Any]) -> int:
    """Nesting depth of a parsed document, without recursion: a value inside ``n``
    arrays or tables is at depth ``n``."""
    deepest = 0
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        children: Collection[Any] = item.values() if type(item) is dict else item
        # Only containers go on the stack (most values are scalars): a container's
        # values, whatever they are, are one level below it. tomllib makes plain dicts
        # and lists, so an exact type test does (and is twice as fast as isinstance).
        if not children:
            continue
        level += 1
        if level > deepest:
            deepest = level
            if deepest > MAX_DEPTH:
                return deepest
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, level))
    return deepest
