"""``answer_of_result`` and ``UnusableFinal`` at the path their reference page documents.

What a finished turn may publish, and the writes a turn ends in, live in
:mod:`symfonic.turns.settlement`.
"""

from symfonic.turns.settlement import UnusableFinal, answer_of_result

__all__ = ["UnusableFinal", "answer_of_result"]
