"""Pure folds over domain events that more than one side needs: an actor deciding, a
projection reading, a replay.

One module per domain (``mcp``, ``delegation``); each side imports the module it needs.
Nothing is re-exported here.
"""

__all__: list[str] = []
