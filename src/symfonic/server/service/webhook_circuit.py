"""A webhook destination's circuit (closed, open, half-open) as pure functions from a circuit
and what happened to the next; the dispatcher writes the result by compare-and-swap
(docs/webhooks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from symfonic.core.contracts.webhooks import CircuitState, Destination
from symfonic.server.service.webhooks import WebhookSettings


@dataclass(frozen=True)
class Outcomes:
    """What a destination's attempts, settled together, said of it.

    ``delivered``: one of them delivered. ``failures``: those that failed after
    the last that delivered (all of them, if none did). ``error``: the last
    failure's reason, in words.
    """

    delivered: bool
    failures: int
    error: str | None

    @classmethod
    def of(cls, errors: Sequence[str | None]) -> Outcomes:
        """From each attempt's error (``None``: it delivered), in the order they ended."""
        delivered = any(error is None for error in errors)
        trailing = 0
        for error in reversed(errors):
            if error is None:
                break
            trailing += 1
        last = next((error for error in reversed(errors) if error is not None), None)
        return cls(delivered, trailing, last)


def backoff(settings: WebhookSettings, opens: int) -> float:
    """Seconds an open circuit waits, the ``opens``-th time in a row it opened."""
    doubled = settings.circuit_backoff * 2 ** min(max(opens - 1, 0), 30)
    return float(min(doubled, settings.circuit_max_backoff))


def _opened(circuit: Destination, failures: int, now: datetime, s: WebhookSettings) -> Destination:
    opens = circuit.opens + 1
    retry_at = now + timedelta(seconds=backoff(s, opens))
    return replace(
        circuit,
        state=CircuitState.OPEN,
        failures=failures,
        opens=opens,
        retry_at=retry_at,
        changed_at=now,
    )


def after(
    circuit: Destination, outcomes: Outcomes, now: datetime, settings: WebhookSettings
) -> Destination:
    """The circuit once ``outcomes`` are known."""
    error = outcomes.error or circuit.last_error
    if outcomes.delivered:
        closed = circuit
        if circuit.state is not CircuitState.CLOSED:
            closed = replace(circuit, state=CircuitState.CLOSED, retry_at=None, changed_at=now)
        closed = replace(closed, failures=0, opens=0, last_error=error)
        if outcomes.failures >= settings.circuit_failures:
            return _opened(closed, outcomes.failures, now, settings)
        return replace(closed, failures=outcomes.failures)
    failures = circuit.failures + outcomes.failures
    failing = replace(circuit, failures=failures, last_error=error)
    if circuit.state is CircuitState.HALF_OPEN or (
        circuit.state is CircuitState.CLOSED and failures >= settings.circuit_failures
    ):
        return _opened(failing, failures, now, settings)
    return failing


def probe(circuit: Destination, now: datetime, hold: float) -> Destination | None:
    """The half-open circuit a worker takes to send one probe; ``None``: not now."""
    if circuit.state is CircuitState.CLOSED or circuit.retry_at is None or circuit.retry_at > now:
        return None
    retry_at = now + timedelta(seconds=hold)
    return replace(circuit, state=CircuitState.HALF_OPEN, retry_at=retry_at, changed_at=now)


def describe(circuit: Destination) -> str:
    """The circuit in words, for a log line or an operator."""
    reason = f" (last: {circuit.last_error})" if circuit.last_error else ""
    at = circuit.retry_at.isoformat(timespec="seconds") if circuit.retry_at else "?"
    if circuit.state is CircuitState.OPEN:
        tried = f"{circuit.failures} failed attempt{'' if circuit.failures == 1 else 's'}"
        return f"circuit open after {tried} in a row{reason}; next try at {at}"
    if circuit.state is CircuitState.HALF_OPEN:
        return f"circuit half-open: one delivery is sent to see whether it answers{reason}"
    if circuit.failures:
        return f"circuit closed, {circuit.failures} failed attempt(s) in a row{reason}"
    return "circuit closed: delivering"
