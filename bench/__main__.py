"""``python -m bench``: the one command that runs the benchmark and writes the report.

``python -m bench soak …`` runs the soak instead (see :mod:`bench.soak`).
"""

import sys

if sys.argv[1:2] == ["soak"]:
    from bench.soak import main as soak

    raise SystemExit(soak(sys.argv[2:]))

from bench.run import main

raise SystemExit(main())
