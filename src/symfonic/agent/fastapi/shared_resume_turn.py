"""`ResumedTurn` at the path its reference page documents; the code is in
`symfonic.turns.resumed_turn`.
"""

from symfonic.turns.resumed_turn import ResumedTurn

__all__ = ["ResumedTurn"]
