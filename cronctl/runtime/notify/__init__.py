"""User notifications (docs/behaviour.md#retention-notifications-and-metrics, ``[notify]``): the
events, their delivery to webhooks and commands, and the ``late`` check."""
