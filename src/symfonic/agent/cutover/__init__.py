"""Continuing a paused turn: rebuild its messages, then run the kernel on."""
