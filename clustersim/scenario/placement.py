"""``placement:`` - how many devices one model replica spans, and where the servers sit.

Why a section of its own: on a many-core machine the same hardware runs one MPI rank (one
model replica) per core, per group of cores or per machine, and the master of a master-based
method can be a rank on one core or own a whole machine - a choice users sweep, not a
different cluster.  Both are expressed on the platform the scenario names:

``devices_per_worker: g`` (default 1)
    every ``g`` consecutive devices of a machine form one worker: the platform is rebuilt
    with ``devices / g`` devices per machine, each ``g`` times the device's compute peak,
    memory bandwidth and memory, and ``g`` times its link into the machine's internal
    switch (``g`` cores copy ``g`` times as much through shared memory).  Ideal scaling
    inside a replica is assumed (a threaded kernel on ``g`` cores runs ``g`` times as fast):
    what a real framework loses there is a per-device efficiency to calibrate.  Needs
    machines with a ``crossbar`` layout (many-core CPUs, ``node: {devices: n, layout:
    crossbar}``) and ``g`` dividing ``n``; ``g = n`` is one replica per machine.
``server: device | machine`` (default ``device``)
    ``device``: each server (a master, a parameter-server shard) takes the next free device,
    as before.  ``machine``: each takes a machine of its own, the first after the workers'
    (none of its devices runs a worker), with the whole machine's compute, memory bandwidth
    and internal link (:func:`clustersim.platform.gang.whole_machine`) - the master on a
    dedicated node.  Sharding is the algorithm's ``shards``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from clustersim.errors import InputError, unknown_name

__all__ = ["PlacementSpec", "SERVERS", "parse_placement", "group_devices", "free_machines",
           "machine_servers", "check_servers"]

#: where servers go (``placement.server``)
SERVERS = ("device", "machine")
_FIELDS = ("devices_per_worker", "server")


@dataclass(frozen=True)
class PlacementSpec:
    """A parsed ``placement:`` section (module docs); the defaults are a scenario without one."""

    devices_per_worker: int = 1
    server: str = "device"


def parse_placement(raw: Any) -> PlacementSpec:
    """The ``placement:`` mapping; errors name the field and the allowed values."""
    if raw is None:
        return PlacementSpec()
    if not isinstance(raw, dict):
        raise InputError(f"must be a mapping with fields {', '.join(_FIELDS)}",
                         path=("placement",))
    for key in raw:
        if key not in _FIELDS:
            raise unknown_name("placement field", key, _FIELDS, path=("placement", key))
    g = raw.get("devices_per_worker", 1)
    if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= 4096:
        raise InputError(f"must be a whole number from 1 to 4096, not {g!r}",
                         path=("placement", "devices_per_worker"))
    server = raw.get("server", "device")
    if server not in SERVERS:
        raise InputError(f"must be one of {', '.join(SERVERS)}, not {server!r}",
                         path=("placement", "server"))
    return PlacementSpec(g, server)


def group_devices(merged: dict[str, Any], catalog: Any, g: int) -> tuple[dict[str, Any], Any]:
    """The platform description (``merged``: the scenario's platform, file and overrides)
    with every ``g`` devices of a machine as one, and the catalog holding the grouped device
    and internal link; raises a located error where grouping does not apply."""
    from clustersim.platform.describe import parse_device, parse_node
    from clustersim.platform.gang import scaled_device
    from clustersim.platform.node import SHARED_MEMORY

    where = ("placement", "devices_per_worker")
    node_raw = merged.get("node")
    if not isinstance(node_raw, dict):
        raise InputError(f"{g} devices per worker needs a platform of many-core machines "
                         f"(a 'node:' section with devices and layout crossbar, as "
                         f"cori_knl_cores); platform {merged.get('name', '')!r} has none",
                         path=where)
    node = parse_node(node_raw, catalog, ("platform", "node"))
    if node.layout != "crossbar":
        raise InputError(f"{g} devices per worker needs machines whose devices share one "
                         f"internal switch (node layout crossbar: cores of a many-core CPU); "
                         f"this platform's layout is {node.layout}", path=where)
    n = node.devices
    if n % g:
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        raise InputError(f"must divide the {n} devices of a machine: one of "
                         f"{', '.join(map(str, divisors))}, not {g}", path=where)
    if node.device is not None:
        spec = node.device
    elif "device" in merged:
        spec = parse_device(merged["device"], catalog, ("platform", "device"))
    else:
        raise InputError("the platform names no device to group", path=where)
    dev = scaled_device(spec, g)
    internal = node.internal or SHARED_MEMORY
    link = replace(internal, name=f"{internal.name} x{g}", bandwidth=internal.bandwidth * g)
    grouped = replace(catalog, devices={**catalog.devices, dev.name: dev},
                      links={**catalog.links, link.name: link})
    new_node = {**node_raw, "devices": n // g, "internal": link.name}
    if "device" in node_raw:
        new_node["device"] = dev.name
    out = {**merged, "node": new_node}
    if "device" in merged:
        out["device"] = dev.name
    out["name"] = f"{merged.get('name', 'platform')} ({g} devices per worker)"
    return out, grouped


def free_machines(platform: Any, workers: int, count: int) -> list[int]:
    """The first device of each of at most ``count`` machines after the last worker's: the
    machines ``placement.server: machine`` can give its servers (fewer than ``count``
    where the workers leave too few; ``clustersim sweep`` skips such a point)."""
    firsts: list[int] = []
    if count <= 0:
        return firsts
    last = platform.host(workers - 1) if workers else -1
    seen = {last}
    for d in range(workers, platform.num_devices):
        h = platform.host(d)
        if h not in seen:
            seen.add(h)
            firsts.append(d)
            if len(firsts) == count:
                break
    return firsts


def machine_servers(platform: Any, workers: int, count: int) -> list[int]:
    """The first device of each of the ``count`` machines after the last worker's
    (``placement.server: machine``), or a located error naming how many are free."""
    firsts = free_machines(platform, workers, count)
    if len(firsts) == count:
        return firsts
    raise InputError(f"a machine of its own for each of {count} server(s) needs {count} "
                     f"machine(s) without workers; with {workers} workers platform "
                     f"{platform.name!r} has {len(firsts)} left (fewer workers, fewer "
                     f"shards, or server: device)", path=("placement", "server"))


def check_servers(platform: Any, workers: Any, algorithms: Any) -> None:
    """``server: machine``: every algorithm's servers find machines of their own at the
    sweep's largest worker count - refused when the scenario is read, not mid-run."""
    from clustersim.algorithms.base import get_algorithm

    most = max(workers, default=0)
    for alg in algorithms:
        count = get_algorithm(alg.name).servers(alg.params)
        if count:
            machine_servers(platform, most, count)
