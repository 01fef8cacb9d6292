"""`rehydrate` and `NOT_DISPATCHED` at the path their reference page documents; the code is in
`symfonic.turns.rehydrate`.
"""

from symfonic.turns.rehydrate import NOT_DISPATCHED, InteractionConfigurationError, rehydrate

__all__ = ["NOT_DISPATCHED", "InteractionConfigurationError", "rehydrate"]
