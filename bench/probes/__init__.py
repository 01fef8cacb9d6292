"""Per-store measurement of bytes and rows written (see :mod:`bench.probes.base`)."""
