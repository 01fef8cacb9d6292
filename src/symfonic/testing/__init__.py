"""Test doubles that ship with symfonic."""

from symfonic.testing.scripted import ScriptedChatModel, call, calls, reply

__all__ = ["ScriptedChatModel", "call", "calls", "reply"]
