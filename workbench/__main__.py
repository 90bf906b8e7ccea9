"""``python -m workbench``: the command line (``tune``, ``best``); see ``workbench.cli``."""

import sys

from workbench.cli import main

sys.exit(main())
