"""``python -m bench``: the one command that runs the benchmark and writes the report."""

from bench.run import main

raise SystemExit(main())
