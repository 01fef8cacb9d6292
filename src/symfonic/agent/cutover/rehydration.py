"""``rehydrate`` and ``NOT_DISPATCHED`` at the path their reference page documents.

The implementation lives in :mod:`symfonic.turns.rehydrate`.
"""

from symfonic.turns.rehydrate import NOT_DISPATCHED, InteractionConfigurationError, rehydrate

__all__ = ["NOT_DISPATCHED", "InteractionConfigurationError", "rehydrate"]
