"""``ResumedTurn`` at the path its reference page documents.

The implementation is shared by every transport and lives in
:mod:`symfonic.turns.resumed_turn`; this module only names it here.
"""

from symfonic.turns.resumed_turn import ResumedTurn

__all__ = ["ResumedTurn"]
