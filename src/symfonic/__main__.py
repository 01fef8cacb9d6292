import sys

from symfonic.cli.main import main

sys.exit(main())
