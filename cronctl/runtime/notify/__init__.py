"""User notifications (SPEC section 7, ``[notify]``): the events, their delivery to
webhooks and commands, and the ``late`` check."""
