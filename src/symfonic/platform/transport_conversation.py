"""``answer_of_result`` and ``UnusableFinal`` at the path their reference page documents.

What a finished turn may publish, and the claimed pause's transitions, live in
:mod:`symfonic.turns.pause_desk`.
"""

from symfonic.turns.pause_desk import PauseDesk, UnusableFinal, answer_of_result

__all__ = ["PauseDesk", "UnusableFinal", "answer_of_result"]
