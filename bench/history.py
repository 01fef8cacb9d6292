"""Realistic, deterministic message bodies: the history every system is seeded with.

Every system gets byte-for-byte the same history, so a difference in bytes written
comes from how the system stores it, never from what it stores. Texts are ~200
bytes drawn from a 5,000-word pseudo-vocabulary with Zipf frequencies, numbers and
full stops: they compress about as well as English prose (zlib ~3×). Filler that
compresses much better (one repeated string, a few dozen words) would flatter any
store that compresses its values, as PostgreSQL's TOAST does.
"""

from __future__ import annotations

import itertools
import random

from bench.workloads.base import HistoryBody

MESSAGE_BYTES = 200

VOCABULARY_SIZE = 5000

# The turn a cycle adds, as the scripted model and the tool produce it.
USER_MESSAGE = "Please pay supplier invoice 4711 for 5 EUR from the operations account today."
FINAL_ANSWER = (
    "Done: I sent the payment of 5 EUR for invoice 4711 from the operations account. "
    "The transfer was approved by you and the supplier will see it within one business day."
)
TOOL_NAME = "send_payment"
TOOL_ARGS: dict[str, object] = {"amount": 5, "currency": "EUR", "invoice": "4711"}
TOOL_RESULT = "payment sent: 5 EUR, invoice 4711, reference PAY-000123"


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """Pseudo-words of 1-4 syllables and their cumulative Zipf weights (1/rank)."""
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    syllables = [c + v for c in consonants for v in vowels]
    syllables += [s + end for s in syllables for end in "nrst"]
    words: set[str] = set()
    while len(words) < VOCABULARY_SIZE:
        length = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        words.add("".join(rng.choice(syllables) for _ in range(length)))
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered, list(itertools.accumulate(1 / rank for rank in range(1, len(ordered) + 1)))


def _text(rng: random.Random, vocabulary: tuple[list[str], list[float]], size: int) -> str:
    words, weights = vocabulary
    parts: list[str] = []
    length = 0
    while length <= size:
        word = rng.choices(words, cum_weights=weights)[0]
        if rng.random() < 0.05:
            word = str(rng.randint(1, 9999))
        if rng.random() < 0.08:
            word += "."
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:size]


def make_history(count: int, *, size: int = MESSAGE_BYTES, seed: int = 6) -> list[HistoryBody]:
    """``count`` alternating human/ai messages, oldest first, ending on an ai reply."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng)
    # Start on the role that makes the last message an ai reply, like a finished turn.
    first_human = count % 2 == 0
    bodies: list[HistoryBody] = []
    for index in range(count):
        human = (index % 2 == 0) == first_human
        bodies.append(HistoryBody("human" if human else "ai", _text(rng, vocabulary, size)))
    return bodies
