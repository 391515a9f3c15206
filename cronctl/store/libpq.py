"""A small DB-API-shaped client over libpq for the read commands (``ctypes``, stdlib).

``cronctl history``, ``logs``, ``status`` and ``why`` run one process per command, and
``import psycopg`` is ~60 ms of such a process on a quiet machine (its adapters, its
``asyncio`` and ``ssl`` imports, and the C extension's start), more than the command's
own work (bench/PROFILE.md). These commands need a connection, a few parameterized
SELECTs and their rows: this module gives exactly that on the libpq that psycopg's
binary wheel bundles (or the system's), loaded with ``ctypes`` in a few milliseconds.
Anything it cannot do (no libpq found, a URL libpq cannot parse) makes :func:`connect`
return ``None`` and the caller uses psycopg as before.

Parameters go as text with their PostgreSQL types (``%s`` and ``%(name)s``
placeholders, as psycopg writes them); results come back as text and are converted by
column type. Only the types the read queries use are known; any other column raises
:class:`InterfaceError` rather than guessing.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any


class Error(Exception):
    """A query or the server failed."""


class OperationalError(Error):
    """The connection failed or was lost."""


class InterfaceError(Error):
    """Something this client does not handle (a type, a placeholder)."""


_OK = (1, 2)  # PGRES_COMMAND_OK, PGRES_TUPLES_OK
_CONNECTION_OK = 0
_PRIMARY = ord("M")  # PG_DIAG_MESSAGE_PRIMARY
# Parameter types by Python type (OIDs): str goes as unknown, typed by its context.
_BOOL, _INT8, _FLOAT8, _TIMESTAMPTZ, _INTERVAL = 16, 20, 701, 1184, 1186
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")


def _load() -> ctypes.CDLL | None:
    """psycopg's bundled libpq (next to its package, found without importing it), else
    the system's."""
    candidates: list[str] = []
    try:
        from importlib.util import find_spec

        spec = find_spec("psycopg_binary")
        for where in (spec.submodule_search_locations or []) if spec else []:
            libs = os.path.join(os.path.dirname(where), "psycopg_binary.libs")
            if os.path.isdir(libs):
                candidates += sorted(os.path.join(libs, f) for f in os.listdir(libs)
                                     if f.startswith("libpq"))
    except (ImportError, ValueError, OSError):
        pass
    candidates.append("libpq.so.5")
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        _declare(lib)
        return lib
    return None


def _declare(lib: ctypes.CDLL) -> None:
    p, i, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    for name, res, args in (
        ("PQconnectdbParams", p, [ctypes.POINTER(s), ctypes.POINTER(s), i]),
        ("PQconninfoParse", p, [s, ctypes.POINTER(p)]),
        ("PQconninfoFree", None, [p]), ("PQfreemem", None, [p]),
        ("PQstatus", i, [p]), ("PQerrorMessage", s, [p]), ("PQfinish", None, [p]),
        ("PQexecParams", p, [p, s, i, ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(s),
                             ctypes.POINTER(i), ctypes.POINTER(i), i]),
        ("PQresultStatus", i, [p]), ("PQresultErrorMessage", s, [p]), ("PQclear", None, [p]),
        ("PQresultErrorField", s, [p, i]),
        ("PQntuples", i, [p]), ("PQnfields", i, [p]), ("PQftype", ctypes.c_uint, [p, i]),
        ("PQgetvalue", s, [p, i, i]), ("PQgetisnull", i, [p, i, i]),
    ):
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


_lib: ctypes.CDLL | None = None


def connect(url: str, *, connect_timeout: int, application_name: str) -> Connection | None:
    """A connection to ``url`` (a ``postgresql://`` URL), or None when this client cannot
    be used here (no libpq, or a URL libpq does not parse: the caller decides). Raises
    :class:`OperationalError` when the server cannot be reached or refuses the login."""
    global _lib
    if _lib is None:
        _lib = _load()
        if _lib is None:
            return None
    lib = _lib
    err = ctypes.c_void_p()
    parsed = lib.PQconninfoParse(url.encode(), ctypes.byref(err))
    if not parsed:
        if err.value:
            lib.PQfreemem(err)
        return None
    lib.PQconninfoFree(parsed)
    # The URL's own settings win over these (libpq applies an expanded dbname last).
    pairs = {"application_name": application_name, "connect_timeout": str(connect_timeout),
             "dbname": url}
    keys = (ctypes.c_char_p * (len(pairs) + 1))(*[k.encode() for k in pairs], None)
    values = (ctypes.c_char_p * (len(pairs) + 1))(*[v.encode() for v in pairs.values()],
                                                  None)
    conn = lib.PQconnectdbParams(keys, values, 1)
    if not conn:
        raise OperationalError("out of memory connecting to the database")
    if lib.PQstatus(conn) != _CONNECTION_OK:
        message = (lib.PQerrorMessage(conn) or b"").decode(errors="replace").strip()
        lib.PQfinish(conn)
        raise OperationalError(message or "connection failed")
    out = Connection(lib, conn)
    out.cursor().execute("SET DateStyle TO ISO")  # the format the rows are parsed from
    return out


class Connection:
    """Autocommit: each statement on its own (the read commands only SELECT)."""

    def __init__(self, lib: ctypes.CDLL, handle: int) -> None:
        self._lib = lib
        self._handle: int | None = handle

    def cursor(self) -> Cursor:
        return Cursor(self)

    def close(self) -> None:
        if self._handle is not None:
            self._lib.PQfinish(self._handle)
            self._handle = None

    def _exec(self, sql: str, params: Sequence[Any] | Mapping[str, Any]
              ) -> list[tuple[Any, ...]]:
        if self._handle is None:
            raise InterfaceError("the connection is closed")
        lib = self._lib
        text, values = _bind(sql, params)
        n = len(values)
        types = (ctypes.c_uint * max(n, 1))(*[t for t, _ in values])
        args = (ctypes.c_char_p * max(n, 1))(
            *[None if v is None else v.encode() for _, v in values])
        res = lib.PQexecParams(self._handle, text.encode(), n, types, args, None, None, 0)
        if not res:
            raise OperationalError(self._message() or "no result from the server")
        try:
            if lib.PQresultStatus(res) not in _OK:
                # The primary message alone, as psycopg reports it (no "ERROR:  " prefix)
                raw = lib.PQresultErrorField(res, _PRIMARY) or lib.PQresultErrorMessage(res)
                message = (raw or b"").decode(errors="replace")
                if lib.PQstatus(self._handle) != _CONNECTION_OK:
                    raise OperationalError(message.strip() or self._message())
                raise Error(message.strip() or "query failed")
            return _rows(lib, res)
        finally:
            lib.PQclear(res)

    def _message(self) -> str:
        return (self._lib.PQerrorMessage(self._handle) or b"").decode(errors="replace").strip()


class Cursor:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._rows: list[tuple[Any, ...]] = []

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> None:
        self._rows = self._conn._exec(sql, params)

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def close(self) -> None:
        self._rows = []


def _bind(sql: str, params: Sequence[Any] | Mapping[str, Any]
          ) -> tuple[str, list[tuple[int, str | None]]]:
    """``%s`` / ``%(name)s`` to ``$n``, and each value as (type OID, text)."""
    values: list[tuple[int, str | None]] = []
    named: dict[str, int] = {}
    positional = iter(()) if isinstance(params, Mapping) else iter(params)

    def place(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        name = m.group(1)
        if name is None:
            try:
                value = next(positional)
            except StopIteration:
                raise InterfaceError("fewer parameters than placeholders") from None
        else:
            if not isinstance(params, Mapping) or name not in params:
                raise InterfaceError(f"no parameter named {name}")
            if name in named:
                return f"${named[name]}"
            value = params[name]
        values.append(_param(value))
        if name is not None:
            named[name] = len(values)
        return f"${len(values)}"

    text = _PLACEHOLDER.sub(place, sql)
    if next(positional, _END) is not _END:
        raise InterfaceError("more parameters than placeholders")
    return text, values


_END = object()


def _param(value: Any) -> tuple[int, str | None]:
    if value is None:
        return 0, None
    if isinstance(value, bool):
        return _BOOL, "t" if value else "f"
    if isinstance(value, int):
        return _INT8, str(value)
    if isinstance(value, float):
        return _FLOAT8, repr(value)
    if isinstance(value, str):
        return 0, value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InterfaceError("naive datetime parameter")
        return _TIMESTAMPTZ, value.astimezone(UTC).isoformat()
    if isinstance(value, timedelta):
        return _INTERVAL, f"{value.total_seconds()!r} seconds"
    raise InterfaceError(f"cannot send a {type(value).__name__} parameter")


def _timestamptz(text: str) -> datetime:
    # ISO DateStyle: "2026-03-08 07:00:00.123456+00" (fromisoformat reads "+00" in 3.11+)
    return datetime.fromisoformat(text)


def _numeric(text: str) -> Any:
    from decimal import Decimal  # (what psycopg returns for numeric; rare here)

    return Decimal(text)


_CONVERT: dict[int, Any] = {
    16: lambda t: t == "t", 20: int, 21: int, 23: int, 26: int, 700: float, 701: float,
    1700: _numeric, 25: str, 1043: str, 1042: str, 19: str, 18: str, 1184: _timestamptz,
    1114: datetime.fromisoformat,
}


def _rows(lib: ctypes.CDLL, res: int) -> list[tuple[Any, ...]]:
    nrows, ncols = lib.PQntuples(res), lib.PQnfields(res)
    if not ncols:
        return []
    converters = []
    for c in range(ncols):
        oid = lib.PQftype(res, c)
        fn = _CONVERT.get(oid)
        if fn is None:
            raise InterfaceError(f"column {c} has a type this client does not read (oid {oid})")
        converters.append(fn)
    get, isnull = lib.PQgetvalue, lib.PQgetisnull
    return [tuple(None if isnull(res, r, c) else fn(get(res, r, c).decode())
                  for c, fn in enumerate(converters)) for r in range(nrows)]


__all__ = ["Connection", "Cursor", "Error", "InterfaceError", "OperationalError", "connect"]
