"""symfonic's benchmark harness: one command, one run, one process tree.

The parent (:mod:`bench.run`) walks the configuration matrix (system × store ×
history × concurrency) and runs each configuration in its own child process
(:mod:`bench.child`), so the peak memory it reports belongs to that configuration
alone. Results land in one JSON file; :mod:`bench.report` turns it into
``docs/benchmarks.md`` and its plots.
"""
