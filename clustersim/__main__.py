"""``python -m clustersim`` = the ``clustersim`` command.

Guarded: the workers of ``python -m mpi4py.futures -m clustersim sweep --mpi`` import the
parent's main module (as ``__mp_main__``, like multiprocessing's spawn) and must not run it.
"""

import sys

from clustersim.cli import main

if __name__ == "__main__":
    sys.exit(main())
