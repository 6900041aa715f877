"""Registers every algorithm module (import order = listing order is irrelevant: sorted)."""

from clustersim.algorithms import bsp, easgd, gossip, hybrid, ps
from clustersim.algorithms.base import register

register(bsp.BSP)
for _defn in (*ps.DEFINITIONS, gossip.GOSGD, hybrid.HYBRID):
    register(_defn)
for _defn in easgd.ALGORITHMS:
    register(_defn)
