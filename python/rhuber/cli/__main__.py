"""`python -m rhuber.cli`: the `rhuber` command."""

import sys

from . import main

sys.exit(main())
