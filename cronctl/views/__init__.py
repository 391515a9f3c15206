"""The documents cronctl shows: one serializer per shape
(docs/architecture.md#one-serializer-per-shape).

The CLI's ``--json`` output and the HTTP API (:mod:`cronctl.serve`) build their JSON
documents with the functions of this package and nothing else, so ``cronctl history
--json`` and ``GET /api/v1/executions`` cannot drift apart. Each module is named for the
command whose document it builds; they read through the store's Protocols and take
``now`` as an argument. Nothing here prints, parses argv or serves HTTP.

Imports stay light at the top of each module (``cronctl next`` imports
:mod:`cronctl.views.next` and must not pay for the store or the job sources).
"""
