"""`answer_of_result` and `UnusableFinal` at the path their reference page documents; the code
is in `symfonic.turns.settlement`.
"""

from symfonic.turns.settlement import UnusableFinal, answer_of_result

__all__ = ["UnusableFinal", "answer_of_result"]
