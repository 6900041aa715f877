"""Platforms: devices, machines, switches and links as a graph, with deterministic routing.

Build one with a topology builder (:mod:`clustersim.platform.builders`) or from YAML
(:func:`build_platform`, :func:`load_platform`); route with :meth:`Platform.route`.
"""

from clustersim.platform.builders import (
    ExplicitLink,
    ExplicitNode,
    dragonfly,
    explicit,
    fat_tree,
    leaf_spine,
    ring,
    single_node,
    star,
    torus,
)
from clustersim.platform.describe import build_platform, list_topologies, load_platform
from clustersim.platform.model import Platform, PlatformBuilder, Route
from clustersim.platform.node import LAYOUTS, NodeSpec

__all__ = [
    "Platform", "PlatformBuilder", "Route", "NodeSpec", "LAYOUTS", "build_platform",
    "load_platform", "list_topologies", "star", "leaf_spine", "fat_tree", "ring", "torus",
    "dragonfly", "single_node", "explicit", "ExplicitNode", "ExplicitLink",
]
