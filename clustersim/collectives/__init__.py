"""Collective algorithms as schedules of point-to-point transfers.

:func:`build_schedule` is the door; :mod:`.schedule` holds the data types and the execution
contract; :mod:`.verify` runs a schedule on NumPy vectors to prove it computes its collective.
"""

from clustersim.collectives.registry import (
    OPS,
    build_schedule,
    describe_algorithm,
    list_algorithms,
)
from clustersim.collectives.schedule import Schedule, Step, Transfer
from clustersim.collectives.usertree import copper_tree

__all__ = ["OPS", "build_schedule", "list_algorithms", "describe_algorithm", "Schedule",
           "Step", "Transfer", "copper_tree"]
