"""realrun: run clustersim's operations on real MPI processes, measure them, keep traces.

Launcher side (no MPI initialised in this process): :func:`launch`, :class:`RealRunError`,
:func:`run_microbenchmarks`, :func:`verify_schedules`, :func:`run_selftest`,
:func:`load_traces`.  Rank side (inside ``mpiexec``): :class:`realrun.runtime.RankContext`,
:mod:`realrun.collectives`, :mod:`realrun.microbench`, :func:`get_backend`.

mpi4py and CuPy are imported lazily, inside the functions that need them: importing
``mpi4py.MPI`` initialises MPI, which the launcher process must never do.
"""

from realrun.api import load_traces, run_microbenchmarks, run_selftest, verify_schedules
from realrun.arrays import Backend, get_backend
from realrun.launch import LaunchResult, RealRunError, launch

__all__ = ["Backend", "LaunchResult", "RealRunError", "get_backend", "launch", "load_traces",
           "run_microbenchmarks", "run_selftest", "verify_schedules"]
