"""``python -m clustersim`` = the ``clustersim`` command."""

import sys

from clustersim.cli import main

sys.exit(main())
