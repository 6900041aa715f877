"""Machines with several devices: the layout inside a node and how it reaches the fabric.

Why model the inside of a node: the papers' results hinge on it.  Theano-MPI's 8-GPU runs
cross the CPU-socket boundary (QPI) and every K80 board shares one PCIe x16 uplink between its
two dies; GPUDirect RDMA decides whether inter-node traffic crosses the CPU and host memory.
A :class:`NodeSpec` says which layout a machine has; :func:`add_machine` adds one machine to a
:class:`~clustersim.platform.model.PlatformBuilder` and returns the nodes the fabric plugs into.

Layouts (``LAYOUTS``):

* ``single`` - one device that is its own network endpoint (the default when a builder gets no
  node spec): the fabric link plugs straight into the device.  Device name ``h{i}``.
* ``ports`` - several devices, each with its own fabric port and nothing between them
  (intra-machine traffic crosses the first switch; one NIC per device).
* ``crossbar`` - devices on one internal switch ``h{i}.bus`` through ``internal`` links, the NICs
  on the same switch: a many-core CPU's on-die mesh (KNL cores) or a generic host bus.
* ``pcie_tree`` - ``sockets`` CPU sockets ``h{i}.cpu{s}`` joined by ``intersocket`` links (QPI or
  UPI; all pairs for more than two sockets); PCIe switches ``h{i}.pcie{j}`` with
  ``devices_per_switch`` devices each, spread evenly over the sockets in order
  (``devices_per_switch: 0`` puts devices straight on the socket's root complex).  Every PCIe
  hop is a ``pcie`` link, so the devices of one switch share its uplink to the CPU.  The
  Theano-MPI K80 node is ``devices: 8, sockets: 2, devices_per_switch: 2``: four boards, each
  a PCIe switch with two dies, two boards per socket.
* ``nvlink_mesh`` - ``pcie_tree`` plus an ``nvlink`` link between every pair of devices.
* ``hybrid_cube_mesh`` - the DGX-1 (P100) arrangement over a ``pcie_tree`` of 4 switches x 2
  GPUs: GPUs 0-3 and 4-7 each fully connected, plus GPU i <-> GPU i+4 (4 NVLinks per GPU;
  DGX-1V doubles some of them - give ``nvlink`` a higher bandwidth to approximate it).

NICs ``h{i}.nic{j}`` hang off the layout through ``nic_link`` (PCIe by default):

* ``gpudirect: true`` - NIC j sits under PCIe switch ``j * switches // nics``, so GPUs on that
  switch reach it without crossing the CPU socket (GPUDirect RDMA's peer-to-peer path).
* ``gpudirect: false`` (host-staged) - NIC j sits on CPU socket ``j * sockets // nics``; every
  path from a GPU to the network crosses the socket (and, in a real machine, host memory).
  With ``devices_per_switch: 0`` the two coincide: the root complex is the only switch.

Routing inside a machine is the platform's minimal-hop routing, so a GPU reaches a NIC under
another PCIe switch through an NVLink peer when that is shorter (as NCCL's PXN does).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from clustersim.catalog import DeviceSpec, LinkSpec, builtin_catalog
from clustersim.errors import InputError, unknown_name
from clustersim.platform.model import PlatformBuilder

__all__ = ["LAYOUTS", "NodeSpec", "Machine", "add_machine", "SHARED_MEMORY", "DEFAULT_LINKS"]

LAYOUTS: dict[str, str] = {
    "single": "one device that is its own network endpoint",
    "ports": "several devices, each with its own fabric port",
    "crossbar": "devices and NICs on one internal switch (many-core CPU mesh, host bus)",
    "pcie_tree": "devices under PCIe switches under CPU sockets joined by QPI/UPI",
    "nvlink_mesh": "pcie_tree plus all-to-all NVLink between devices",
    "hybrid_cube_mesh": "DGX-1: 8 GPUs, two NVLink quads joined i<->i+4, over pcie_tree",
}

#: Default ``internal`` link of the ``crossbar`` layout: an MPI shared-memory copy between
#: cores.  Order of magnitude only (a core streams ~10 GB/s; intra-node MPI latency is a
#: fraction of a microsecond) - calibrate it.
SHARED_MEMORY = LinkSpec(
    "shm", bandwidth=10e9, latency=0.5e-6,
    source="order of magnitude for an MPI shared-memory copy between cores; calibrate",
)

#: (field, least, most) of a machine's counts: the most is far beyond any machine built
#: (the largest shipped node is a 68-core KNL; a DGX has 8 GPUs and 4-8 NICs)
_COUNTS = (("devices", 1, 1024), ("nics", 0, 64), ("sockets", 1, 64),
           ("devices_per_switch", 0, 1024))

_NVLINK_LAYOUTS = ("nvlink_mesh", "hybrid_cube_mesh")
_TREE_LAYOUTS = ("pcie_tree", *_NVLINK_LAYOUTS)


#: The catalog link class a node's link takes when the description leaves it out.  A node
#: described in YAML takes it from the catalog in force (the scenario's ``catalog:`` over the
#: platform file's over the built-in one: :func:`~clustersim.platform.describe.parse_node`),
#: so an override or a ``catalog.links.X.bandwidth`` axis reaches these links as it reaches
#: the ones named explicitly (QA 12 F7: the NICs' ``pcie3x16`` links had kept the built-in
#: 15.75 GB/s beside GPUs' links at the overridden figure).
DEFAULT_LINKS: dict[str, str] = {"pcie": "pcie3x16", "nic_link": "pcie3x16",
                                 "intersocket": "qpi", "nvlink": "nvlink2"}


def _default_link(field: str) -> LinkSpec:
    """The built-in class of ``field`` (:data:`DEFAULT_LINKS`): only for a :class:`NodeSpec`
    built in Python, where no other catalog is in force."""
    return builtin_catalog().link(DEFAULT_LINKS[field])


@dataclass(frozen=True)
class NodeSpec:
    """One machine: how many devices, how they are wired, how they reach the fabric.

    Links left ``None`` take the built-in catalog's classes (:data:`DEFAULT_LINKS`): ``pcie``
    and ``nic_link`` pcie3x16, ``intersocket`` qpi, ``nvlink`` nvlink2; ``internal``
    :data:`SHARED_MEMORY`.  A node parsed from YAML has them filled from the catalog in force
    instead (:func:`~clustersim.platform.describe.parse_node`).
    ``device`` overrides the device the topology builder was given.
    """

    devices: int = 1
    layout: str = "single"
    device: DeviceSpec | None = None
    nics: int = 1
    gpudirect: bool = False
    sockets: int = 2
    devices_per_switch: int = 2
    pcie: LinkSpec | None = None
    intersocket: LinkSpec | None = None
    nvlink: LinkSpec | None = None
    nic_link: LinkSpec | None = None
    internal: LinkSpec | None = None

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise unknown_name("layout", self.layout, LAYOUTS, path=("layout",))
        for name, low, high in _COUNTS:
            value = getattr(self, name)
            if isinstance(value, float) and value.is_integer():
                value = int(value)
                object.__setattr__(self, name, value)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"{name} must be an integer >= {low} and <= {high}, not "
                                 f"{value!r}", path=(name,))
        if not isinstance(self.gpudirect, bool):
            from clustersim.scenario.yamldialect import bool_hint  # yes/no: YAML 1.2 strings

            raise InputError(f"gpudirect must be true or false{bool_hint(self.gpudirect)}, "
                             f"not {self.gpudirect!r}", path=("gpudirect",))
        if self.layout == "single" and self.devices != 1:
            raise InputError(
                f"layout 'single' holds one device, not {self.devices} (use 'crossbar', "
                "'pcie_tree', 'nvlink_mesh', 'hybrid_cube_mesh' or 'ports')", path=("devices",))
        if self.layout == "hybrid_cube_mesh" and self.devices != 8:
            raise InputError(f"layout 'hybrid_cube_mesh' is the DGX-1's 8 GPUs, not "
                             f"{self.devices}", path=("devices",))
        for f in fields(self):
            if f.name in ("pcie", "intersocket", "nvlink", "nic_link", "internal"):
                value = getattr(self, f.name)
                if value is not None and not isinstance(value, LinkSpec):
                    raise InputError(f"{f.name} must be a link class, not {value!r}",
                                     path=(f.name,))

    @property
    def pcie_switches(self) -> int:
        """PCIe switches per machine in the tree layouts (0 for the others)."""
        if self.layout not in _TREE_LAYOUTS or self.devices_per_switch == 0:
            return 0
        return -(-self.devices // self.devices_per_switch)

    @property
    def has_nics(self) -> bool:
        """False for layouts whose devices are themselves the fabric endpoints."""
        return self.layout not in ("single", "ports")


@dataclass(frozen=True)
class Machine:
    """One machine as added to a builder: its devices and the nodes the fabric plugs into."""

    index: int
    devices: tuple[str, ...]
    ports: tuple[str, ...]


def add_machine(b: PlatformBuilder, index: int, node: NodeSpec | None,
                device: DeviceSpec | None) -> Machine:
    """Add machine ``index`` (devices get ``host=index``) and return its fabric ports."""
    node = node or NodeSpec()
    spec = node.device or device
    if spec is None:
        raise InputError("no device given (set the topology's or the node's 'device')",
                         path=("device",))
    p = f"h{index}"
    if node.layout == "single":
        return Machine(index, (b.add_device(p, spec, host=index),), (p,))
    devs = tuple(b.add_device(f"{p}.d{d}", spec, host=index, slot=d)
                 for d in range(node.devices))
    if node.layout == "ports":
        return Machine(index, devs, devs)
    nic_link = node.nic_link or _default_link("nic_link")
    nics = tuple(b.add_node(f"{p}.nic{j}", "nic") for j in range(node.nics))
    if node.layout == "crossbar":
        bus = b.add_node(f"{p}.bus", "bus")
        internal = node.internal or SHARED_MEMORY
        for d in devs:
            b.add_link(d, bus, internal)
        for nic in nics:
            b.add_link(nic, bus, nic_link)
        return Machine(index, devs, nics)
    _add_pcie_tree(b, p, node, devs, nics, nic_link)
    nvlink = node.nvlink or _default_link("nvlink")
    if node.layout == "nvlink_mesh":
        for i in range(len(devs)):
            for j in range(i + 1, len(devs)):
                b.add_link(devs[i], devs[j], nvlink)
    elif node.layout == "hybrid_cube_mesh":
        for i, j in hybrid_cube_mesh_pairs():
            b.add_link(devs[i], devs[j], nvlink)
    return Machine(index, devs, nics)


def hybrid_cube_mesh_pairs() -> list[tuple[int, int]]:
    """NVLink pairs of the DGX-1 (P100): two fully connected quads plus i <-> i+4."""
    pairs = [(i, j) for quad in ((0, 1, 2, 3), (4, 5, 6, 7))
             for a, i in enumerate(quad) for j in quad[a + 1:]]
    pairs += [(i, i + 4) for i in range(4)]
    return sorted(pairs)


def _add_pcie_tree(b: PlatformBuilder, p: str, node: NodeSpec, devs: tuple[str, ...],
                   nics: tuple[str, ...], nic_link: LinkSpec) -> None:
    pcie = node.pcie or _default_link("pcie")
    qpi = node.intersocket or _default_link("intersocket")
    cpus = [b.add_node(f"{p}.cpu{s}", "cpu") for s in range(node.sockets)]
    for s in range(node.sockets):
        for t in range(s + 1, node.sockets):
            b.add_link(cpus[s], cpus[t], qpi)
    nsw = node.pcie_switches
    switches = [b.add_node(f"{p}.pcie{j}", "pcie") for j in range(nsw)]
    # a link that ends at a CPU root port carries the class's cpu_transport: peer-to-peer
    # through the root complex is slower than through a PCIe switch (catalog transports)
    for j, sw in enumerate(switches):
        b.add_link(sw, cpus[j * node.sockets // nsw], pcie, transport=pcie.cpu_transport)
    for d, dev in enumerate(devs):
        if nsw:
            b.add_link(dev, switches[d // node.devices_per_switch], pcie)
        else:
            b.add_link(dev, cpus[d * node.sockets // len(devs)], pcie,
                       transport=pcie.cpu_transport)
    for j, nic in enumerate(nics):
        if node.gpudirect and nsw:
            b.add_link(nic, switches[j * nsw // len(nics)], nic_link)
        else:
            b.add_link(nic, cpus[j * node.sockets // len(nics)], nic_link,
                       transport=nic_link.cpu_transport)
