"""A fire's life on the scheduler thread, from the core's decision to its final status.

Read in this order: :mod:`.firing` (carries out the core's actions), :mod:`.rowwrites`
(the execution rows written before dispatch), :mod:`.waiters` and :mod:`.retryrows`
(pending rows written ahead), :mod:`.holding` (admitted fires held until their instant
or their row), :mod:`.lookahead` (a crowded instant decided ahead), :mod:`.relaying`
(waiting fires staged for a worker), :mod:`.batches` (final statuses and cursors
written in batches), :mod:`.handled` (skip records and cursors), :mod:`.watch` (what
observers hear), :mod:`.records` (the values passed between steps).
"""
