"""The catalog figures a scenario's prediction rests on that no published measurement backs.

Why: a user who builds a platform from datasheets gets the catalog's link hop latencies and
transport figures (docs/fabrics.md, "Transports").  Most are read from published
microbenchmarks; the rest are marked ``assumed:`` in the catalog (``links.yaml``,
``transports.yaml``) and are as free as any ``uncertain:`` input - the prediction hangs on
them.  The catalog's prose says so, but nobody reads a YAML file before every prediction:
``predict`` and ``validate`` name the assumed figures *this* scenario uses, so the reader
knows what to calibrate (docs/calibration.md) or put under ``uncertain:``.

A figure counts as used when the scenario's messages would pay it, on the routes between a
sample of the platform's devices: a link class's hop latency when such a route crosses a
link of the class that carries the catalog's value; a transport's figure when it is the
transport of such a route's bottleneck link (the network model's own choice), with
``network.transports`` on, no explicit ``network.overhead``/``efficiency`` in its place and
no calibrated protocol table of that class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["AssumedFigure", "assumed_figures", "assumed_line"]

_LABEL = {"latency": "hop latency", "bandwidth": "bandwidth", "efficiency": "efficiency",
          "overhead": "overhead", "inline": "inline size", "dma_read": "DMA read"}
#: a transport figure's place in NetworkParams.transports' tuples (name, overhead, ...)
_USED = {"overhead": 1, "efficiency": 2, "inline": 3, "dma_read": 4}


@dataclass(frozen=True)
class AssumedFigure:
    """One assumed catalog figure a scenario uses: ``kind`` is ``link`` or ``transport``."""

    kind: str
    entry: str
    field: str
    value: float

    def text(self) -> str:
        """``omnipath overhead 1 us``: the entry, the figure and its value with its unit."""
        from clustersim.units import format_bandwidth, format_size, format_time

        fmt = {"bandwidth": format_bandwidth, "inline": format_size,
               "efficiency": lambda v: f"{v:g}"}.get(self.field, format_time)
        return f"{self.entry} {_LABEL[self.field]} {fmt(self.value)}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "entry": self.entry, "field": self.field,
                "value": self.value}


def assumed_figures(scn: Any) -> list[AssumedFigure]:
    """The assumed catalog figures ``scn`` and its variants simulate with (see the module's
    docstring), link classes first, each kind in name order."""
    found: set[AssumedFigure] = set()
    for s in (scn, *(v for _, v in getattr(scn, "variants", ()) or ())):
        found.update(_figures(s))
    return sorted(found, key=lambda f: (f.kind != "link", f.entry, f.field))


#: devices sampled along the platform (each with its neighbour): routes between them stand
#: for the platform's - inside a machine, across it, far apart
_SAMPLE = 16
#: a route longer than this many hops between sampled devices: a direct network (a ring or
#: a torus of many hosts), where every pair of the sample is too long a walk
_SHORT = 64
#: on such a network, every pair of this many devices from each sampled one is routed
#: too (its machine's devices and the next machine's: the paths inside a machine, and out of
#: it from every socket)
_LOCAL = 16


def _sample_routes(plat: Any) -> list[Any]:
    """Routes between a deterministic sample of devices: all pairs on a small platform, else
    ``_SAMPLE`` evenly spaced devices and the device after each (so that paths inside a
    machine are in the sample too), every pair of them - the sample of earlier versions.

    On a direct network, whose routes between sampled devices are longer than ``_SHORT``
    hops, every pair is too long a walk (up to 50,000 hops on a ring of 100,000 hosts: its
    992 routes took half a minute to validate a seven-line file).  There the sample is each
    sampled device to the next one and the first to the middle one (every level and every
    kind of link between machines is on that chain), both ways, and every pair of the
    ``_LOCAL`` devices from each sampled one (the paths inside its machine and out of it
    from every socket: the sampled devices can all be their machines' first GPUs)."""
    n = plat.num_devices
    if n <= 2 * _SAMPLE:
        idx: list[int] = list(range(n))
        return plat.routes([(a, b) for a in idx for b in idx if a != b])
    step = n / _SAMPLE
    idx = sorted({min(n - 1, int(k * step) + d) for k in range(_SAMPLE) for d in (0, 1)})
    chain = {*zip(idx, idx[1:]), (idx[0], idx[len(idx) // 2])}
    routes = plat.routes(sorted(chain | {(b, a) for a, b in chain}))
    if max(map(len, routes), default=0) <= _SHORT:
        return plat.routes([(a, b) for a in idx for b in idx if a != b])
    local = {(a, b) for w in idx for a in range(w, min(n, w + _LOCAL))
             for b in range(w, min(n, w + _LOCAL)) if a != b}
    return routes + plat.routes(sorted(local))


def _figures(scn: Any) -> list[AssumedFigure]:
    from clustersim.network.params import TRANSPORT_KEY, bottleneck_class

    plat = scn.platform
    net = scn.network
    links = scn.catalog.links
    routes = _sample_routes(plat)
    out: list[AssumedFigure] = []
    # link classes: every hop of a route pays its class's latency
    kinds = plat.link_kind
    seen: dict[str, set[tuple[float, float]]] = {}
    for route in routes:
        for lk in route:
            kind = kinds[lk]
            if kind in links and links[kind].assumed:
                seen.setdefault(kind, set()).add((float(plat.capacity[lk]),
                                                  float(plat.latency[lk])))
    for kind in sorted(seen):
        spec = links[kind]
        for f in spec.assumed:
            value = getattr(spec, f)
            col = 0 if f == "bandwidth" else 1
            if any(math.isclose(v[col], value, rel_tol=1e-12) for v in seen[kind]):
                out.append(AssumedFigure("link", kind, f, value))
    # transports: a message pays the one of its bottleneck link, when no calibrated table of
    # that class (or "*") replaces it - the network's own choice (bottleneck_class)
    keys = net.platform_keys(plat)
    used: set[str] = set()
    if keys is not None and net.weights:
        for route in routes:
            key = bottleneck_class(route, plat.capacity, keys, net.weights)
            if key is not None and key.startswith(TRANSPORT_KEY):
                used.add(key[len(TRANSPORT_KEY):])
    applied = {t[0]: t for t in net.transports}
    for name in sorted(used):
        spec = plat.transport_specs.get(name)
        row = applied.get(name, ())
        for f in getattr(spec, "assumed", ()):
            if f in net.explicit:
                continue  # the scenario's own figure replaces it
            if len(row) > _USED[f] and math.isclose(row[_USED[f]], getattr(spec, f),
                                                    rel_tol=1e-12):
                out.append(AssumedFigure("transport", name, f, getattr(spec, f)))
    return out


def assumed_line(figures: list[AssumedFigure]) -> str | None:
    """One line for people (None: nothing assumed)."""
    if not figures:
        return None
    return ("assumed catalog figures (no published measurement; calibrate them, "
            "docs/calibration.md): " + ", ".join(f.text() for f in figures))
