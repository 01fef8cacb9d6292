"""Continuing a paused turn: rebuild its messages, then run the kernel on.

"Cutover" is the moment a paused turn passes from its durable checkpoint back to
a live kernel, on whichever worker won the claim.
"""
