"""Continuing a paused turn, at the paths its reference pages name.

"Cutover" is the moment a paused turn passes from its durable checkpoint back to
a live kernel, on whichever worker won the claim. The code is in
:mod:`symfonic.turns.rehydrate` and :mod:`symfonic.turns.continuation`.
"""
