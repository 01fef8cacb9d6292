"""symfonic on SQLite with ``?synchronous=normal``: what syncing every commit costs.

The same agent and cycle as :mod:`bench.workloads.symfonic_workload`, its store
URL opting out of ``synchronous=FULL``: the WAL is synced only at checkpoints,
so a power cut may undo the last commits. Beside ``symfonic`` (FULL) in one run
it gives the price of the default's durability; against LangGraph it is the
comparison at unequal durability unless ``--sqlite-synchronous NORMAL``. On
PostgreSQL it is the same workload as ``symfonic``.
"""

from __future__ import annotations

from bench.workloads.symfonic_workload import SymfonicWorkload


class SymfonicNormalWorkload(SymfonicWorkload):
    system = "symfonic+normal"
    sqlite_options = "?synchronous=normal"
    synchronous = "NORMAL (?synchronous=normal)"
