"""``python -m realrun``: see :mod:`realrun.main`."""

import sys

from realrun.main import main

sys.exit(main())
