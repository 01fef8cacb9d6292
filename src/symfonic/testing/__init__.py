"""Test doubles that ship with symfonic."""

from symfonic.testing.scripted import ScriptedChatModel, call, calls, current_turn, reply

__all__ = ["ScriptedChatModel", "call", "calls", "current_turn", "reply"]
