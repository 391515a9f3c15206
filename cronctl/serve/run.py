"""The composition root of ``cronctl serve``: configuration, store, tokens, the
application, and uvicorn running it until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING

from cronctl.apiconfig import DEFAULT_LISTEN
from cronctl.errors import ConfigError, StoreError
from cronctl.options import GlobalOptions

if TYPE_CHECKING:
    from cronctl.serve.context import ServeContext

log = logging.getLogger("cronctl.serve")


def serve(options: GlobalOptions, listen: tuple[str, int] | None, version: str) -> None:
    """Serve until interrupted. ``listen`` overrides ``[api] listen`` (default loopback)."""
    import uvicorn

    from cronctl.config import format_listen, load_config
    from cronctl.serve.app import build_app
    from cronctl.serve.context import ServeContext
    from cronctl.serve.tokens import TokenSource
    from cronctl.store import open_store

    config = load_config(options)  # ConfigError: the file's violations, one line each
    if config.in_memory:
        raise StoreError("'cronctl serve' shows the state database, and the database is "
                         "'none'; set [scheduler] database (or --database) to a SQLite or "
                         "PostgreSQL URL")
    if config.api.tokens_file is None:
        # Over TCP, the socket's peer says nothing about who may read the jobs' output
        # (another local user, a reverse proxy, a rebound web page): a token says it.
        raise ConfigError(NO_TOKENS)
    host, port = listen or config.api.listen or DEFAULT_LISTEN
    tokens = TokenSource(config.api.tokens_file)
    store = open_store(config.database, node_id=config.node_id,
                       auto_migrate=config.auto_migrate)
    ctx = ServeContext(options, config, store, tokens, listen_host=host)
    _logging(options.verbose)
    where = format_listen((host, port))
    log.info("serving http://%s/ (%d token(s) from %s; database %s)", where,
             len(tokens.current()), config.api.tokens_file, config.database_display)
    signal.signal(signal.SIGHUP, lambda *_: threading.Thread(
        target=_reload, args=(ctx,), name="cronctl-sighup", daemon=True).start())
    ctx.start()
    try:
        uvicorn.run(build_app(ctx, version), host=host, port=port, log_level="warning",
                    access_log=options.verbose > 0, server_header=False, proxy_headers=False)
    finally:
        ctx.close()


NO_TOKENS = ("'cronctl serve' needs [api] tokens_file, every request presents a token: "
             "add tokens_file = \"tokens\" under [api] in cronctl.toml, then 'cronctl token "
             "add NAME --role operate' prints one ('cronctl init' writes both)")


def _reload(ctx: ServeContext) -> None:
    """SIGHUP: read the tokens file again, following ``[api] tokens_file`` if the
    configuration now names another one."""
    from cronctl.config import read_config

    try:
        path = read_config(ctx.options).config.api.tokens_file
    except Exception as exc:  # a broken cronctl.toml: keep the file in use
        log.error("SIGHUP: cronctl.toml cannot be read (%s); reading %s again", exc,
                  ctx.token_source.path)
        path = None
    ctx.token_source.reload(path)
    log.info("SIGHUP: tokens file %s read again", ctx.token_source.path)


def _logging(verbose: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("cronctl")
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
