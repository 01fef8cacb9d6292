"""`kernel_resume` at the path its reference page documents; the code is in
`symfonic.turns.continuation`.
"""

from symfonic.turns.continuation import kernel_resume

__all__ = ["kernel_resume"]
