"""Registers every algorithm module (import order = listing order is irrelevant: sorted)."""

from clustersim.algorithms import bsp
from clustersim.algorithms.base import register

register(bsp.BSP)
