"""Continuing a paused turn, at the paths its reference pages name; the code is in
`symfonic.turns.rehydrate` and `symfonic.turns.continuation`.
"""
