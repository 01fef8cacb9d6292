"""A brake on guessing API keys: wrong keys are counted per client address and per key prefix,
and a braked request is refused (429) without its key being checked.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from symfonic.core.contracts.errors import TooManyFailedKeys

DEFAULT_BURST = 10
DEFAULT_INTERVAL = 6.0
MAX_TRACKED = 10_000
PREFIX_CHARS = 16


@dataclass
class _Bucket:
    allowance: float
    updated: float


class _Buckets:
    """Failures a name may still make; one more comes back every ``interval`` seconds."""

    def __init__(self, burst: int, interval: float, clock: Callable[[], float]) -> None:
        self._burst = burst
        self._interval = interval
        self._clock = clock
        self._buckets: dict[bytes, _Bucket] = {}

    def wait(self, name: bytes) -> float:
        """Seconds until ``name`` may fail again; 0 when it may now."""
        bucket = self._refilled(name)
        if bucket is None or bucket.allowance >= 1:
            return 0.0
        return (1 - bucket.allowance) * self._interval

    def spend(self, name: bytes) -> None:
        bucket = self._refilled(name)
        if bucket is None:
            self._make_room()
            bucket = self._buckets[name] = _Bucket(self._burst, self._clock())
        bucket.allowance = max(0.0, bucket.allowance - 1)

    def _refilled(self, name: bytes) -> _Bucket | None:
        bucket = self._buckets.get(name)
        if bucket is not None:
            now = self._clock()
            regained = (now - bucket.updated) / self._interval
            bucket.allowance = min(float(self._burst), bucket.allowance + regained)
            bucket.updated = now
        return bucket

    def _make_room(self) -> None:
        if len(self._buckets) < MAX_TRACKED:
            return
        now = self._clock()
        recovered = [
            name
            for name, bucket in self._buckets.items()
            if bucket.allowance + (now - bucket.updated) / self._interval >= self._burst
        ]
        for name in recovered:
            del self._buckets[name]
        if len(self._buckets) >= MAX_TRACKED:
            del self._buckets[next(iter(self._buckets))]


def _prefix(key: str) -> bytes:
    key = key.strip()
    return hashlib.sha256(key[: min(PREFIX_CHARS, len(key) // 2)].encode()).digest()


class KeyBrake:
    """Failed key attempts per client address and per key prefix (see the module)."""

    def __init__(
        self,
        burst: int = DEFAULT_BURST,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._addresses = _Buckets(burst, interval, clock)
        self._prefixes = _Buckets(burst, interval, clock)

    def __repr__(self) -> str:
        return "KeyBrake()"

    def check(self, address: str, key: str) -> None:
        """Refuse a key from ``address`` while the address or the key's prefix is braked."""
        wait = max(self._addresses.wait(address.encode()), self._prefixes.wait(_prefix(key)))
        if wait > 0:
            raise TooManyFailedKeys(
                "too many wrong API keys came from this address, or for keys beginning like "
                "this one; wait before trying again",
                retry_after=math.ceil(wait),
            )

    def failed(self, address: str, key: str) -> None:
        """Count one wrong key from ``address``."""
        self._addresses.spend(address.encode())
        self._prefixes.spend(_prefix(key))
