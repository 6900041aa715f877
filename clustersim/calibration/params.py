"""The registry of calibration parameters: names, units, defaults, sources, what fits them.

Why one registry: a number that a calibration profile may move has to be findable - what it
means, in which unit, where its default comes from, which benchmark measures it.  Every
parameter the simulator's timing depends on is listed in :data:`REGISTRY`, as a name pattern
(``link.{link}.bandwidth`` stands for one parameter per link class).  :func:`scenario_values`
reads the current value of every instance from a scenario - the same names - which is what
"which parameters moved and by how much" compares before and after a profile is applied.

Where the values live in the model (nothing is duplicated here, only described):

* ``device.*``  -> :class:`clustersim.catalog.DeviceSpec` fields (the roofline per device)
* ``link.*``    -> link resources of the platform (:class:`clustersim.catalog.LinkSpec`)
* ``network.*`` -> :class:`clustersim.network.params.NetworkParams` (incl. piecewise protocols)
* ``compute.*`` -> :class:`clustersim.workload.ComputeOverrides` (per kernel class)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from clustersim.units import format_bandwidth, format_size, format_time

__all__ = ["ParamDef", "REGISTRY", "lookup", "scenario_values", "format_value", "UNITS"]

#: unit name -> how a value of that unit is shown
UNITS = ("s", "B", "B/s", "FLOP/s", "1", "bool")


@dataclass(frozen=True)
class ParamDef:
    """One calibration parameter (or a family of them: ``{device}``/``{link}``/``{k}``)."""

    name: str
    unit: str
    default: str
    source: str
    fitted_from: str
    doc: str


_DEFS = [
    # -- devices: the roofline per kernel ------------------------------------------------------
    ParamDef("device.{device}.peak", "FLOP/s", "catalog devices.yaml", "vendor datasheet",
             "gemm (raised only if a GEMM beats the datasheet)",
             "fp32 peak; efficiencies are fractions of it"),
    ParamDef("device.{device}.efficiency", "1", "0.5 (DeviceSpec)", "Paleo-style percent of peak",
             "gemm", "fraction of peak reached by dense kernels (layers without a class "
                     "override)"),
    ParamDef("device.{device}.mem_bw", "B/s", "catalog devices.yaml", "vendor datasheet",
             "memory (raised only if a copy beats the datasheet)", "memory bandwidth"),
    ParamDef("device.{device}.mem_efficiency", "1", "0.7 (DeviceSpec)", "STREAM-like rule of thumb",
             "memory (copy)", "fraction of mem_bw a memory-bound kernel sustains"),
    ParamDef("device.{device}.overhead", "s", "10 us (DeviceSpec)", "kernel launch / dispatch",
             "gemm + memory (intercept)", "fixed cost per kernel (launch, Python dispatch)"),
    ParamDef("device.{device}.reduce_bw", "B/s", "mem_bw * mem_efficiency / 3",
             "a += b reads two buffers, writes one", "reduce",
             "bytes/s at which a received buffer is summed into the local one"),
    ParamDef("device.{device}.pack_rate", "B/s", "(none: packing not modelled)",
             "GotoBLAS-style GEMMs pack A and B into panels before multiplying",
             "gemm (shapes whose operands are large next to their FLOPs)",
             "bytes/s of a GEMM's input operands (A and B) added to its roofline time; "
             "what makes small-batch GEMMs slow per FLOP"),
    ParamDef("device.{device}.share_efficiency", "1", "1 (DeviceSpec)",
             "ranks time-slicing one GPU get this fraction of it together",
             "gemm + memory timed with every rank computing against one rank alone "
             "(time_shared devices only)",
             "with k workers computing at once on a time_shared device each takes "
             "k / share_efficiency times as long (clustersim/sim/sharing.py)"),
    ParamDef("workload.jitter", "1", "0 (scenario)", "per-pass compute noise, lognormal",
             "noise (one GEMM timed call by call on every rank)",
             "coefficient of variation of a forward or backward pass's time; a profile's "
             "device jitter replaces the scenario's when every device is calibrated"),
    # -- workload compute overrides ----------------------------------------------------------
    ParamDef("compute.efficiency.{cls}", "1", "device efficiency", "ComputeOverrides",
             "gemm (conv-shaped / fc-shaped GEMMs)",
             "fraction of peak per kernel class (conv, fc, other)"),
    ParamDef("compute.efficiency.fc_wgrad", "1", "(none: fc backward is one kernel)",
             "ComputeOverrides", "gemm (fc GEMMs with k < min(m, n): batch inner)",
             "fraction of peak of an fc layer's weight-gradient GEMM; when set, an fc "
             "backward pass is two kernels (weight gradient at this, input gradient at fc)"),
    ParamDef("compute.mem_efficiency", "1", "device mem_efficiency", "ComputeOverrides",
             "memory", "fraction of mem_bw, overriding the device's"),
    ParamDef("compute.overhead", "s", "device overhead", "ComputeOverrides", "gemm + memory",
             "per-kernel overhead, overriding the device's"),
    # -- links -------------------------------------------------------------------------------
    ParamDef("link.{link}.bandwidth", "B/s", "catalog links.yaml", "datasheet",
             "pingpong (fastest segment)", "capacity per direction of every link of the class"),
    ParamDef("link.{link}.latency", "s", "catalog links.yaml", "typical published figure",
             "pingpong (smallest one-way time / hops)", "latency of one hop"),
    ParamDef("link.{link}.duplex", "bool", "true (catalog)", "LinkSpec.duplex",
             "collective (full vs half duplex, the better fit)",
             "whether the two directions of a cable have their own capacity (false: a memory "
             "copy transport whose directions share one memory system)"),
    # -- network -----------------------------------------------------------------------------
    ParamDef("network.overhead", "s", "0", "NetworkParams (textbook alpha = hop latencies)",
             "pingpong (when no protocol table applies)",
             "per-message software overhead for classes without a protocol table"),
    ParamDef("network.efficiency", "1", "1.0", "NetworkParams", "(not fitted here)",
             "fraction of link capacity flows share under contention"),
    ParamDef("network.step_overhead", "s", "0", "NetworkParams", "collective",
             "software cost per step of a collective schedule (posting and completing its "
             "messages)"),
    ParamDef("network.collective_efficiency", "1", "1.0", "NetworkParams", "collective",
             "rate of a collective's transfers relative to lone point-to-point messages"),
    ParamDef("network.protocol.{link}.{k}.start", "B", "(no table)", "SimGrid-style segmentation",
             "pingpong (breakpoint detection, or given)",
             "first message size of protocol segment k (eager/rendezvous switch, cache limits)"),
    ParamDef("network.protocol.{link}.{k}.overhead", "s", "(no table)", "piecewise alpha",
             "pingpong", "per-message overhead in segment k, on top of the hop latencies"),
    ParamDef("network.protocol.{link}.{k}.efficiency", "1", "(no table)", "piecewise beta",
             "pingpong", "fraction of the link bandwidth a message of segment k reaches"),
    ParamDef("network.protocol.{link}.{k}.collective_efficiency", "1", "1.0",
             "collective alpha-beta correction", "collective",
             "rate of a collective's transfer in segment k relative to a lone message"),
]

REGISTRY: dict[str, ParamDef] = {d.name: d for d in _DEFS}


def _pattern(name: str) -> str:
    """``device.k80.peak`` -> ``device.{device}.peak`` (the registry key of an instance)."""
    parts = name.split(".")
    if parts[0] == "device" and len(parts) == 3:
        return f"device.{{device}}.{parts[2]}"
    if parts[0] == "link" and len(parts) == 3:
        return f"link.{{link}}.{parts[2]}"
    if name in REGISTRY:
        return name
    if parts[:2] == ["compute", "efficiency"] and len(parts) == 3:
        return "compute.efficiency.{cls}"
    if parts[:2] == ["network", "protocol"] and len(parts) == 5:
        return f"network.protocol.{{link}}.{{k}}.{parts[4]}"
    return name


def lookup(name: str) -> ParamDef:
    """The definition of a parameter instance (``KeyError`` for names not in the registry)."""
    return REGISTRY[_pattern(name)]


def format_value(name: str, value: float) -> str:
    """A value in the parameter's unit, the way people read it."""
    return format_unit(value, lookup(name).unit)


def format_unit(value: float | None, unit: str) -> str:
    """``value`` in ``unit`` (s, B/s, B, FLOP/s, s/B, bool or a plain number), readable."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if unit == "s/B":
        return f"{_number(value * 1e9)} ns/B"
    if unit == "s":
        # a fitted time below a femtosecond is a fit at its bound of 0 (it printed as
        # "8.29e-17 ns"); no clock or model resolves it
        return format_time(0.0 if abs(value) < 1e-15 else value)
    if unit == "B/s":
        return format_bandwidth(value)
    if unit == "B":
        return format_size(value)
    if unit == "FLOP/s":
        return f"{_number(value / 1e9)} GFLOP/s"
    if unit == "bool":
        return "true" if value else "false"
    return _number(value)


def _number(value: float) -> str:
    """4 significant digits without an exponent up to 1e15: ``997,400``, not ``9.974e+05``
    (an interval's end of a loose fit, a rate in GFLOP/s).  Below 1e-4 the exponent stays
    (``1.5e-05``, as ``.4g`` writes it): shorter and clearer than its zeros."""
    rounded = float(f"{value:.4g}")  # 9,999.6 is 10,000, not 1e+04
    if 1e4 <= abs(rounded) < 1e15:
        return f"{rounded:,.0f}"
    return f"{value:.4g}"


def scenario_values(scn: Any) -> dict[str, float]:
    """Every registered parameter's current value in a scenario, by instance name.

    Devices and links are read from the built platform (what the simulator uses); a link
    class whose links do not all agree reports its first link's values.
    """
    out: dict[str, float] = {}
    plat = scn.platform
    seen: set[str] = set()
    for d in range(plat.num_devices):
        spec = plat.spec(d)
        if spec.name in seen:
            continue
        seen.add(spec.name)
        pre = f"device.{spec.name}"
        out[f"{pre}.peak"] = spec.peak
        out[f"{pre}.efficiency"] = spec.efficiency
        out[f"{pre}.mem_bw"] = spec.mem_bw
        out[f"{pre}.mem_efficiency"] = spec.mem_efficiency
        out[f"{pre}.overhead"] = spec.overhead
        out[f"{pre}.reduce_bw"] = spec.reduce_bw
        if spec.pack_rate is not None:
            out[f"{pre}.pack_rate"] = spec.pack_rate
        if spec.time_shared:
            out[f"{pre}.share_efficiency"] = spec.share_efficiency
    edges_per_resource: dict[int, int] = {}
    for _, _, data in plat.cables():
        edges_per_resource[data["link"]] = edges_per_resource.get(data["link"], 0) + 1
    for rid, kind in enumerate(plat.link_kind):
        key = f"link.{kind}.bandwidth"
        if key not in out:
            out[key] = float(plat.capacity[rid])
            out[f"link.{kind}.latency"] = float(plat.latency[rid])
            out[f"link.{kind}.duplex"] = float(edges_per_resource.get(rid, 1) == 1)
    net = scn.network
    out["network.overhead"] = net.overhead
    out["network.efficiency"] = net.efficiency
    out["network.step_overhead"] = net.step_overhead
    out["network.collective_efficiency"] = net.collective_efficiency
    for kind, table in net.protocols:
        for k, seg in enumerate(table):
            pre = f"network.protocol.{kind}.{k}"
            out[f"{pre}.start"] = seg.start
            out[f"{pre}.overhead"] = seg.overhead
            out[f"{pre}.efficiency"] = seg.efficiency
            out[f"{pre}.collective_efficiency"] = seg.collective_efficiency
    wl = getattr(scn, "workload", None)
    if wl is not None:
        out["workload.jitter"] = float(wl.jitter)
    comp = getattr(wl, "compute", None) if wl is not None else None
    if comp is not None:
        for cls, eff in sorted(comp.efficiency.items()):
            out[f"compute.efficiency.{cls}"] = float(eff)
        if comp.mem_efficiency is not None:
            out["compute.mem_efficiency"] = float(comp.mem_efficiency)
        if comp.overhead is not None:
            out["compute.overhead"] = float(comp.overhead)
    return out
