"""``kernel_resume`` at the path its reference page documents.

The implementation lives in :mod:`symfonic.turns.continuation`.
"""

from symfonic.turns.continuation import kernel_resume

__all__ = ["kernel_resume"]
