"""The store talks to databases through their drivers (sqlite3, psycopg, SQLAlchemy), never
through a client of its own: no module under ``cronctl/store`` imports ``ctypes``, at any
depth of the module (inside functions and ``TYPE_CHECKING`` blocks too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STORE = Path(__file__).resolve().parents[2] / "cronctl" / "store"
FORBIDDEN = "ctypes"


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
              in ("import_module", "__import__")
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


def _forbidden(source: str) -> list[tuple[int, str]]:
    return [(line, name) for line, name in _imported(ast.parse(source))
            if name == FORBIDDEN or name.startswith(FORBIDDEN + ".")]


MODULES = sorted(STORE.rglob("*.py"))


def test_there_are_store_modules() -> None:
    assert len(MODULES) > 10, MODULES


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(STORE)) for p in MODULES])
def test_no_store_module_imports_ctypes(path: Path) -> None:
    assert _forbidden(path.read_text()) == [], path


@pytest.mark.parametrize("source", [
    "import ctypes",
    "import os, ctypes.util",
    "from ctypes import CDLL",
    "def load():\n    from ctypes import util\n",
    "import importlib\nimportlib.import_module('ctypes')",
    "__import__('ctypes')",
])
def test_the_check_catches_every_form(source: str) -> None:
    assert _forbidden(source)


def test_the_check_leaves_other_imports_alone() -> None:
    assert _forbidden("import sqlite3\nfrom cronctl.store import reads\nimport ctypeslike") == []
