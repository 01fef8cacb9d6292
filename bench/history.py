"""Realistic, deterministic message bodies: the history every system is seeded with.

Every system gets byte-for-byte the same history, so a difference in bytes written
comes from how the system stores it, never from what it stores. Texts are ~200
bytes of varied words (not one repeated string), because compressible filler would
flatter any store that compresses pages or TOASTs values.
"""

from __future__ import annotations

import random

from bench.workloads.base import HistoryBody

MESSAGE_BYTES = 200

_VOCABULARY = (
    "invoice payment supplier account balance transfer approve pending "
    "schedule quarter budget review vendor contract renewal amount currency "
    "refund order shipment delivery customer ticket priority escalation "
    "summary report team meeting deadline forecast margin revenue expense "
    "receipt reconcile ledger audit policy limit threshold request confirm "
    "status update weekly monthly"
)
_WORDS = _VOCABULARY.split()

# The turn a cycle adds, as the scripted model and the tool produce it.
USER_MESSAGE = "Please pay supplier invoice 4711 for 5 EUR from the operations account today."
FINAL_ANSWER = (
    "Done: I sent the payment of 5 EUR for invoice 4711 from the operations account. "
    "The transfer was approved by you and the supplier will see it within one business day."
)
TOOL_NAME = "send_payment"
TOOL_ARGS: dict[str, object] = {"amount": 5, "currency": "EUR", "invoice": "4711"}
TOOL_RESULT = "payment sent: 5 EUR, invoice 4711, reference PAY-000123"


def _text(rng: random.Random, index: int, size: int) -> str:
    words: list[str] = [f"[{index}]"]
    length = len(words[0])
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def make_history(count: int, *, size: int = MESSAGE_BYTES, seed: int = 6) -> list[HistoryBody]:
    """``count`` alternating human/ai messages, oldest first, ending on an ai reply."""
    rng = random.Random(seed)
    # Start on the role that makes the last message an ai reply, like a finished turn.
    first_human = count % 2 == 0
    bodies: list[HistoryBody] = []
    for index in range(count):
        human = (index % 2 == 0) == first_human
        bodies.append(HistoryBody("human" if human else "ai", _text(rng, index, size)))
    return bodies
