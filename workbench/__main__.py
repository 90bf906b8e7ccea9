"""``python -m workbench``: the command line (``tune``, ``best``); see ``workbench.tune.cli``."""

import sys

from workbench.tune.cli import main

sys.exit(main())
