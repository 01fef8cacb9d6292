"""``kernel_resume`` at the path its reference page documents.

The implementation lives in :mod:`symfonic.turns.run_on`.
"""

from symfonic.turns.run_on import kernel_resume

__all__ = ["kernel_resume"]
