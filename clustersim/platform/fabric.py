"""Helpers shared by the topology builders: argument checks and plugging machines in.

Builders raise :class:`~clustersim.errors.InputError` whose ``path`` is the parameter name, so
the YAML layer only has to prefix its own location (``platform.k``) to point at the field.
"""

from __future__ import annotations

from collections.abc import Callable

from clustersim.catalog import DeviceSpec, LinkSpec
from clustersim.errors import InputError
from clustersim.platform import stamp
from clustersim.platform.builder import MAX_DEVICES, PlatformBuilder, size_error
from clustersim.platform.node import Machine, NodeSpec, add_machine

__all__ = ["check_count", "check_link", "check_node", "plug_machines", "MAX_COUNT"]

#: largest value of any count parameter (hosts, leaves, groups, ...); the platform as a whole
#: is bounded by :data:`~clustersim.platform.model.MAX_NODES` and ``MAX_LINKS``
MAX_COUNT = 100_000


def check_count(name: str, value: object, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """An integer parameter in ``[minimum, maximum]`` (bools are not integers here; a whole
    float such as ``1e3`` - YAML 1.2 reads it as a float - is)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be an integer, not {value!r}", path=(name,))
    if not minimum <= value <= maximum:
        raise InputError(f"{name} must be >= {minimum} and <= {maximum:,}, not {value}",
                         path=(name,))
    return value


def check_link(name: str, value: object) -> LinkSpec:
    """``value`` when it is a link class (a catalog ``LinkSpec``); else an input error at
    parameter ``name``."""
    if not isinstance(value, LinkSpec):
        raise InputError(f"{name} must be a link class, not {value!r}", path=(name,))
    return value


def check_node(node: object, *, fabric: bool, direct: bool = False) -> NodeSpec:
    """The node spec (default: one device per host) checked against the network kind.

    ``fabric``: machines must reach a network, so they need at least one port.  ``direct``:
    a direct network routes through each machine, which therefore needs exactly one port (the
    device itself, or the NIC acting as the router).
    """
    if node is None:
        return NodeSpec()
    if not isinstance(node, NodeSpec):
        raise InputError(f"node must be a node description, not {node!r}", path=("node",))
    if fabric and node.has_nics and node.nics < 1:
        raise InputError("machines on a network need at least one NIC", path=("node", "nics"))
    if direct:
        if node.layout == "ports":
            raise InputError("a direct network routes through one port per machine; layout "
                             "'ports' gives each device its own", path=("node", "layout"))
        if node.has_nics and node.nics != 1:
            raise InputError(f"in a direct network the machine's single NIC is its router; "
                             f"nics must be 1, not {node.nics}", path=("node", "nics"))
    return node


def plug_machines(b: PlatformBuilder, count: int, device: DeviceSpec, node: NodeSpec,
                  link: LinkSpec, switch_of: Callable[[int], str], cost: int = 1
                  ) -> list[Machine]:
    """Add ``count`` machines and join every port of machine ``i`` to ``switch_of(i)``.

    Too many devices in all is refused before the first machine is added: the builder would
    refuse the device past the bound anyway (:data:`~clustersim.platform.model.MAX_DEVICES`),
    after seconds of building the machines before it."""
    if count * node.devices > MAX_DEVICES:
        raise size_error("devices")

    def plug(i: int) -> Machine:  # one machine, call by call
        m = add_machine(b, i, node, device)
        for port in m.ports:
            b.add_link(port, switch_of(i), link, cost=cost)
        return m

    start = stamp.mark(b)
    first = plug(0)
    # machines 1.. are machine 0 again (clustersim.platform.stamp: same nodes, links, ids)
    tpl = stamp.template(b, start, "h0") if count > 1 else None
    if tpl is None or tpl.outside != (switch_of(0),):
        return [first, *(plug(i) for i in range(1, count))]
    rest = range(1, count)
    prefixes = [f"h{i}" for i in rest]
    stamp.stamp(b, tpl, prefixes, rest, [(switch_of(i),) for i in rest])
    devs = tuple(d[len("h0"):] for d in first.devices)
    ports = tuple(p[len("h0"):] for p in first.ports)
    return [first, *(Machine(i, tuple(p + d for d in devs), tuple(p + q for q in ports))
                     for i, p in zip(rest, prefixes))]
