"""The EASGD family (Zhang et al. 2015; You, Buluc, Demmel 2017): five algorithms.

=====================  =======================================================================
easgd_round_robin      original EASGD: one master serves the workers in rank order
async_easgd            master serves whichever worker is ready (FIFO), one update at a time
async_measgd           Async EASGD with Nesterov-momentum local steps (EAMSGD)
hogwild_easgd          FIFO master updating the centre without a lock
sync_easgd             every tau steps one collective of all workers (deterministic)
=====================  =======================================================================

See :mod:`~clustersim.algorithms.easgd.master`, :mod:`~clustersim.algorithms.easgd.sync` and
:mod:`~clustersim.algorithms.easgd.common` (parameters, sources and the update math).
"""

from clustersim.algorithms.easgd.master import ASYNC, ASYNC_M, HOGWILD, ROUND_ROBIN
from clustersim.algorithms.easgd.sync import SYNC

__all__ = ["ALGORITHMS", "ROUND_ROBIN", "ASYNC", "ASYNC_M", "HOGWILD", "SYNC"]

#: every EASGD algorithm definition, for the registry
ALGORITHMS = (ROUND_ROBIN, ASYNC, ASYNC_M, HOGWILD, SYNC)
