"""The composition root of ``cronctl serve``: configuration, store, tokens, the
application, and uvicorn running it until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import sys

from cronctl.apiconfig import DEFAULT_LISTEN
from cronctl.errors import StoreError
from cronctl.options import GlobalOptions

log = logging.getLogger("cronctl.serve")


def serve(options: GlobalOptions, listen: tuple[str, int] | None, version: str) -> None:
    """Serve until interrupted. ``listen`` overrides ``[api] listen`` (default loopback)."""
    import uvicorn

    from cronctl.config import format_listen, load_config
    from cronctl.listen import is_loopback
    from cronctl.serve.app import build_app
    from cronctl.serve.context import ServeContext
    from cronctl.serve.tokens import read_tokens
    from cronctl.store import open_store

    config = load_config(options)  # ConfigError: the file's violations, one line each
    if config.in_memory:
        raise StoreError("'cronctl serve' shows the state database, and the database is "
                         "'none'; set [scheduler] database (or --database) to a SQLite or "
                         "PostgreSQL URL")
    host, port = listen or config.api.listen or DEFAULT_LISTEN
    tokens = read_tokens(config.api.tokens_file) if config.api.tokens_file else None
    store = open_store(config.database, node_id=config.node_id,
                       auto_migrate=config.auto_migrate)
    ctx = ServeContext(options, config, store, tokens)
    _logging(options.verbose)
    where = format_listen((host, port))
    mode = (f"{len(tokens)} token(s) from {config.api.tokens_file}" if tokens is not None
            else "no tokens file: read-only, loopback clients only")
    log.info("serving http://%s/ (%s; database %s)", where, mode, config.database_display)
    if tokens is None and not is_loopback(host):
        log.warning("listening on %s without [api] tokens_file: clients that are not on "
                    "loopback get 403", where)
    try:
        uvicorn.run(build_app(ctx, version), host=host, port=port, log_level="warning",
                    access_log=options.verbose > 0, server_header=False, proxy_headers=False)
    finally:
        ctx.close()


def _logging(verbose: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("cronctl")
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
