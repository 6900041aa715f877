"""Topology builders: functions from a few parameters to a :class:`Platform`.

Every builder takes the device spec and link specs explicitly (the scenario layer resolves
names through the catalog) so that builders stay pure and testable.  Multi-device machines
come from a :class:`~clustersim.platform.node.NodeSpec` passed as ``node=``; ranks are numbered
in machine order, then device order.  Bad arguments raise
:class:`~clustersim.errors.InputError` whose ``path`` names the parameter.

The implementations live in :mod:`~clustersim.platform.switched` (star, leaf_spine, fat_tree,
dragonfly, single_node), :mod:`~clustersim.platform.direct` (ring, torus) and
:mod:`~clustersim.platform.explicit`; this module gathers them and names them for the YAML
``topology:`` field.
"""

from __future__ import annotations

from collections.abc import Callable

from clustersim.platform.direct import ring, torus, torus_distance
from clustersim.platform.explicit import ExplicitLink, ExplicitNode, explicit
from clustersim.platform.model import Platform
from clustersim.platform.node import LAYOUTS, NodeSpec
from clustersim.platform.switched import (
    ARRANGEMENTS,
    dragonfly,
    dragonfly_global_links,
    fat_tree,
    leaf_spine,
    single_node,
    star,
)

__all__ = [
    "star", "leaf_spine", "fat_tree", "ring", "torus", "dragonfly", "single_node", "explicit",
    "ExplicitNode", "ExplicitLink", "NodeSpec", "LAYOUTS", "ARRANGEMENTS", "TOPOLOGIES",
    "list_topologies", "torus_distance", "dragonfly_global_links",
]

#: ``topology:`` name -> (builder, one-line description).
TOPOLOGIES: dict[str, tuple[Callable[..., Platform], str]] = {
    "star": (star, "hosts on one non-blocking switch (a crossbar)"),
    "leaf_spine": (leaf_spine, "two-level Clos: every leaf switch joined to every spine, "
                               "optionally oversubscribed"),
    "fat_tree": (fat_tree, "k-ary fat-tree (Al-Fares): k pods, (k/2)^2 cores, up to k^3/4 "
                           "hosts, non-blocking"),
    "dragonfly": (dragonfly, "all-to-all router groups joined by global links (Cray "
                             "Aries-like), minimal routing"),
    "ring": (ring, "hosts in a bidirectional ring, each host a router"),
    "torus": (torus, "2D/3D torus with wraparound, each host a router"),
    "node": (single_node, "one multi-device machine, no network (e.g. an 8-GPU box)"),
    "explicit": (explicit, "any graph from a node list and a link list"),
}


def list_topologies() -> dict[str, str]:
    """Topology names with a one-line description each (the CLI prints this)."""
    return {name: desc for name, (_, desc) in TOPOLOGIES.items()}
