"""``cronctl serve``: the HTTP API and the dashboard (docs/behaviour.md#the-http-api).

FastAPI serves it, uvicorn runs it, Jinja2 renders the pages. Every document comes from
:mod:`cronctl.views`, the same functions the CLI's ``--json`` uses; everything is read
from and written to the state database, so any number of replicas can run, with or
without a scheduler. Imported only by ``cronctl serve`` (FastAPI and its friends never
load for the other commands).
"""
