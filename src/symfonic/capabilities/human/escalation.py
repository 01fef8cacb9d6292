"""Escalation chains: who is asked next when nobody answers a pause.

A chain is checked when the agent is built and then written into the pause row, so any
worker's sweep can apply it.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from symfonic.core.contracts.errors import ConfigurationError
from symfonic.core.contracts.types import Escalation


def escalation(
    after: float, audience: str, *, keep_previous: bool = True, extend: float | None = None
) -> Escalation:
    """One escalation step: unanswered for ``after`` seconds, the pause goes to ``audience``.

    Args:
        after: seconds from the pause's creation. A step due after the expiry never happens.
        audience: the scope the pause is re-addressed to.
        keep_previous: whether the audience before keeps access.
        extend: with seconds, the pause expires no sooner than that long after the
            step. Otherwise its expiry never moves.
    """
    if not after > 0:
        raise ConfigurationError(f"an escalation comes some seconds after the pause, not {after}")
    if not audience:
        raise ConfigurationError("an escalation's audience is a scope name")
    if extend is not None and not extend > 0:
        raise ConfigurationError(f"an escalation extends the expiry by some seconds, not {extend}")
    return Escalation(
        after=float(after), audience=audience, keep_previous=keep_previous, extend=extend
    )


def escalation_chain(steps: Iterable[Escalation] | None) -> tuple[Escalation, ...]:
    """``steps`` as a chain, refused unless each comes later than the one before."""
    chain = tuple(steps or ())
    for step in chain:
        if not isinstance(step, Escalation):
            raise ConfigurationError(f"escalate= takes escalation(...) steps, not {step!r}")
    for earlier, later in pairwise(chain):
        if later.after <= earlier.after:
            raise ConfigurationError(
                f"escalation steps count from the pause's creation, each later than the one "
                f"before: {later.after:g} s comes after {earlier.after:g} s"
            )
    return chain
