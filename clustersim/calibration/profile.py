"""Calibration profiles: the YAML file ``clustersim predict --calibration FILE`` applies.

A profile says what was measured on one machine, in the model's own terms::

    format: clustersim-calibration/1
    about: fitted from microbenchmarks on host x (2 ranks)
    devices:                      # DeviceSpec fields of catalog devices, by name
      localhost_core:
        peak: 50 GFLOP/s
        efficiency: 0.61          # dense kernels; per class below
        efficiency_by_class: {conv: 0.58, fc: 0.61, other: 0.61, fc_wgrad: 0.8}
        mem_bw: 10 GB/s
        mem_efficiency: 0.52
        overhead: 4.2 us          # per kernel
        reduce_rate: 3.9 GB/s     # a += b, operand bytes per second
        jitter: 0.08              # CV of a kernel call (noise bench) -> workload.jitter
        pack_rate: 3.4 GB/s       # GEMM operand packing (A and B), bytes per second
    links:                        # link classes, by name
      localhost_shm: {bandwidth: 6.6 GB/s, latency: 4.8 us}
    network:
      step_overhead: 12 us        # per collective schedule step
      protocols:                  # piecewise alpha-beta per link class
        localhost_shm:
          - {start: 0 B, overhead: 0 us, efficiency: 1.0}
          - {start: 1 MiB, overhead: 0 us, efficiency: 0.49, collective_efficiency: 0.5}
    fit: [...]                    # every fitted number with its 95 % interval (for people)
    validation: {...}             # predicted vs measured end-to-end runs (for people)

Applying it to a scenario (:func:`apply_profile`) replaces the specs of the devices it names
and the parameters of the link classes it names *on the built platform* (so it works with
every topology), merges its protocol tables into the scenario's network parameters, and -
when every device of the platform is calibrated with the same per-class efficiencies -
replaces the workload's compute overrides with them (a profile measured on the device is
better evidence than a scenario's guess) - and, when the devices carry a measured ``jitter``,
the workload's jitter with the largest of them.  Entries that match nothing in the scenario are
reported, not applied; machine-wide numbers (``network.step_overhead``, ``overhead``,
``efficiency``) are applied only when at least one device or link class matched - a
profile of this laptop says nothing about a KNL partition's MPI.  What moved is printed
(stderr) parameter by parameter with the registry's names (:mod:`.params`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clustersim.calibration.retune import DEVICE_FIELDS
from clustersim.errors import InputError, unknown_name
from clustersim.network.params import NetworkParams, Segment
from clustersim.units import UnitError, parse_bandwidth, parse_flops, parse_size, parse_time

__all__ = ["FORMAT", "Profile", "Change", "load_profile", "dump_profile", "write_profile"]

FORMAT = "clustersim-calibration/1"
#: keys of ``efficiency_by_class``: the workload's EFFICIENCY_CLASSES (``fc_wgrad`` only
#: when the calibration measured weight-gradient GEMMs on their own)
KERNEL_CLASSES = ("conv", "fc", "other", "fc_wgrad")
_TOP = ("format", "about", "source", "warnings", "devices", "links", "network", "fit",
        "validation", "covariance")
_DEVICE_KEYS = (*DEVICE_FIELDS, "efficiency_by_class", "jitter")
_LINK_KEYS = ("bandwidth", "latency", "duplex")
_NETWORK_KEYS = ("overhead", "efficiency", "step_overhead", "collective_efficiency",
                 "protocols")
_SEGMENT_KEYS = ("start", "overhead", "efficiency", "collective_efficiency")


@dataclass
class Profile:
    """A calibration profile in SI units (see the module docs for the file format)."""

    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    network: dict[str, float] = field(default_factory=dict)
    protocols: dict[str, tuple[Segment, ...]] = field(default_factory=dict)
    about: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    fit: list[dict[str, Any]] = field(default_factory=list)
    validation: dict[str, Any] | None = None
    file: str | None = None
    #: covariance blocks of the fitted parameters (clustersim.calibration.covariance)
    covariance: list[Any] = field(default_factory=list)
    #: what the fit could not stand behind (e.g. a fit missing its rows by > 100 % rms)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Change:
    """One parameter that a profile moved."""

    name: str
    before: float | None
    after: float

    @property
    def relative(self) -> float | None:
        if self.before is None or self.before == 0:
            return None
        return self.after / self.before - 1.0


# -- writing ---------------------------------------------------------------------------------
def _sig(x: float, digits: int = 6) -> str:
    return f"{x:.{digits}g}"


def _q_time(x: float) -> str:
    if abs(x) < 1e-15:  # a fit at its bound of 0 (1.02e-18 ns, QA 19 L10), as the table shows
        return "0 s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if abs(x) >= scale:
            return f"{_sig(x / scale)} {unit}"
    return f"{_sig(x / 1e-9)} ns"


def _q_rate(x: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{_sig(x / scale)} {prefix}{unit}"
    return f"{_sig(x)} {unit}"


def _q_size(x: float) -> str:
    return f"{int(x)} B" if float(x).is_integer() else f"{_sig(x)} B"


def _device_yaml(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _DEVICE_KEYS:
        if key not in fields or fields[key] is None:
            continue
        v = fields[key]
        if key == "peak":
            out[key] = _q_rate(v, "FLOP/s")
        elif key in ("mem_bw", "reduce_rate", "pack_rate"):
            out[key] = _q_rate(v, "B/s")
        elif key == "overhead":
            out[key] = _q_time(v)
        elif key == "efficiency_by_class":
            out[key] = {c: float(_sig(e)) for c, e in sorted(v.items())}
        else:
            out[key] = float(_sig(v))
    return out


def _segment_yaml(seg: Segment) -> dict[str, Any]:
    out: dict[str, Any] = {"start": _q_size(seg.start), "overhead": _q_time(seg.overhead),
                           "efficiency": float(_sig(seg.efficiency))}
    if seg.collective_efficiency != 1.0:
        out["collective_efficiency"] = float(_sig(seg.collective_efficiency))
    return out


def dump_profile(prof: Profile) -> str:
    """The profile as YAML text (deterministic: same profile, same bytes)."""
    doc: dict[str, Any] = {"format": FORMAT}
    if prof.about:
        doc["about"] = prof.about
    if prof.source:
        doc["source"] = prof.source
    if prof.warnings:
        doc["warnings"] = list(prof.warnings)
    if prof.devices:
        doc["devices"] = {n: _device_yaml(f) for n, f in sorted(prof.devices.items())}
    if prof.links:
        doc["links"] = {n: {k: (_q_rate(v, "B/s") if k == "bandwidth" else
                                bool(v) if k == "duplex" else _q_time(v))
                            for k, v in f.items()} for n, f in sorted(prof.links.items())}
    net: dict[str, Any] = {}
    for key in ("overhead", "step_overhead"):
        if key in prof.network:
            net[key] = _q_time(prof.network[key])
    for key in ("efficiency", "collective_efficiency"):
        if key in prof.network:
            net[key] = float(_sig(prof.network[key]))
    if prof.protocols:
        net["protocols"] = {c: [_segment_yaml(s) for s in segs]
                            for c, segs in sorted(prof.protocols.items())}
    if net:
        doc["network"] = net
    if prof.fit:
        doc["fit"] = prof.fit
    if prof.validation:
        doc["validation"] = prof.validation
    if prof.covariance:
        from clustersim.calibration.covariance import dump_covariance

        doc["covariance"] = dump_covariance(prof.covariance)
    head = ("# clustersim calibration profile - apply with: clustersim predict SCENARIO "
            "--calibration THIS_FILE\n")
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100,
                                 allow_unicode=True)


def write_profile(prof: Profile, path: str | Path) -> None:
    """Write :func:`dump_profile`'s text to ``path`` whole or not at all (an interrupted
    calibration must not leave half a profile for ``--calibration`` to read)."""
    from clustersim.fsio import atomic_write

    atomic_write(path, dump_profile(prof))


# -- reading ---------------------------------------------------------------------------------
def _mapping(raw: Any, path: tuple) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping", path=path)
    return raw


def _check_keys(raw: Mapping[str, Any], allowed: Sequence[str], what: str, path: tuple) -> None:
    for key in raw:
        if key not in allowed:
            raise unknown_name(what, str(key), allowed, path=(*path, key))


def _fraction(value: Any, path: tuple, upper: float | None = 1.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or not math.isfinite(value) or (upper is not None and value > upper):
        rng = f"(0, {upper:g}]" if upper is not None else "> 0"
        raise InputError(f"must be a number in {rng}, not {value!r}", path=path)
    return float(value)


def _parse(fn: Any, value: Any, path: tuple, **kw: Any) -> float:
    try:
        return float(fn(value, **kw))
    except UnitError as exc:
        raise InputError(str(exc), path=path) from None


def _parse_device(raw: Any, path: tuple) -> dict[str, Any]:
    raw = _mapping(raw, path)
    _check_keys(raw, _DEVICE_KEYS, "device field", path)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        where = (*path, key)
        if key == "peak":
            out[key] = _parse(parse_flops, value, where)
        elif key in ("mem_bw", "reduce_rate", "pack_rate"):
            out[key] = _parse(parse_bandwidth, value, where)
        elif key == "overhead":
            out[key] = _parse(parse_time, value, where)
        elif key == "efficiency_by_class":
            cls = _mapping(value, where)
            _check_keys(cls, KERNEL_CLASSES, "kernel class", where)
            out[key] = {c: _fraction(v, (*where, c)) for c, v in cls.items()}
        elif key == "jitter":
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not 0 <= value <= 1):
                raise InputError(f"must be a coefficient of variation in [0, 1], not "
                                 f"{value!r}", path=where)
            out[key] = float(value)
        else:
            out[key] = _fraction(value, where)
    return out


def _parse_segments(raw: Any, path: tuple) -> tuple[Segment, ...]:
    if not isinstance(raw, list) or not raw:
        raise InputError("must be a list of segments {start, overhead, efficiency}", path=path)
    segs = []
    for i, item in enumerate(raw):
        where = (*path, i)
        item = _mapping(item, where)
        _check_keys(item, _SEGMENT_KEYS, "segment field", where)
        missing = [k for k in _SEGMENT_KEYS[:3] if k not in item]
        if missing:
            raise InputError(f"segment needs {', '.join(missing)}", path=where)
        ceff = 1.0
        if "collective_efficiency" in item:
            ceff = _fraction(item["collective_efficiency"], (*where, "collective_efficiency"),
                             upper=None)
        segs.append(Segment(_parse(parse_size, item["start"], (*where, "start")),
                            _parse(parse_time, item["overhead"], (*where, "overhead")),
                            _fraction(item["efficiency"], (*where, "efficiency"), upper=None),
                            ceff))
    try:
        NetworkParams(protocols=(("x", tuple(segs)),))
    except ValueError as exc:
        raise InputError(str(exc), path=path) from None
    for i in range(1, len(segs)):
        # in order, not sorted here: a segment's index names its parameters (the covariance
        # block's network.protocol.<link>.<k>.…), so a reordered list would swap them
        if segs[i].start < segs[i - 1].start:
            from clustersim.units import format_size

            order = ", ".join(format_size(x.start) for x in segs)
            raise InputError(f"segments must start at increasing sizes: "
                             f"{format_size(segs[i].start)} after "
                             f"{format_size(segs[i - 1].start)} (the list reads {order})",
                             path=(*path, i, "start"))
    return tuple(segs)


def parse_profile(raw: Any, file: str | None = None) -> Profile:
    """Validate a parsed profile mapping (errors name the field and, with a file, the line)."""
    from clustersim.scenario.yamlio import line_of

    try:
        return _parse_profile(raw, file)
    except InputError as exc:
        if exc.file is None:
            raise exc.located(file=file, line=line_of(raw, exc.path)) from None
        raise


def _parse_profile(raw: Any, file: str | None) -> Profile:
    if not isinstance(raw, Mapping):
        raise InputError("a calibration profile must be a YAML mapping (format:, devices:, "
                         "links:, network:)")
    _check_keys(raw, _TOP, "profile section", ())
    fmt = raw.get("format")
    if fmt != FORMAT:
        raise InputError(f"is {fmt!r}; this clustersim reads {FORMAT!r} (write one with "
                         f"'clustersim calibrate')", path=("format",))
    prof = Profile(about=str(raw.get("about", "") or ""), file=file)
    prof.source = dict(_mapping(raw.get("source"), ("source",)))
    warns = raw.get("warnings") or []
    if not isinstance(warns, list):
        raise InputError("must be a list of texts", path=("warnings",))
    prof.warnings = [str(w) for w in warns]
    for name, dev in _mapping(raw.get("devices"), ("devices",)).items():
        prof.devices[str(name)] = _parse_device(dev, ("devices", name))
    for name, link in _mapping(raw.get("links"), ("links",)).items():
        where = ("links", name)
        link = _mapping(link, where)
        _check_keys(link, _LINK_KEYS, "link field", where)
        fields = {}
        if "bandwidth" in link:
            fields["bandwidth"] = _parse(parse_bandwidth, link["bandwidth"], (*where, "bandwidth"))
        if "latency" in link:
            fields["latency"] = _parse(parse_time, link["latency"], (*where, "latency"))
        if "duplex" in link:
            if not isinstance(link["duplex"], bool):
                raise InputError(f"must be true or false, not {link['duplex']!r}",
                                 path=(*where, "duplex"))
            fields["duplex"] = link["duplex"]
        prof.links[str(name)] = fields
    net = _mapping(raw.get("network"), ("network",))
    _check_keys(net, _NETWORK_KEYS, "network field", ("network",))
    for key in ("overhead", "step_overhead"):
        if key in net:
            prof.network[key] = _parse(parse_time, net[key], ("network", key))
    if "efficiency" in net:
        prof.network["efficiency"] = _fraction(net["efficiency"], ("network", "efficiency"))
    if "collective_efficiency" in net:
        prof.network["collective_efficiency"] = _fraction(
            net["collective_efficiency"], ("network", "collective_efficiency"), upper=None)
    for cls, segs in _mapping(net.get("protocols"), ("network", "protocols")).items():
        prof.protocols[str(cls)] = _parse_segments(segs, ("network", "protocols", cls))
    fit = raw.get("fit") or []
    if not isinstance(fit, list):
        raise InputError("must be a list", path=("fit",))
    prof.fit = [dict(x) for x in fit if isinstance(x, Mapping)]
    val = raw.get("validation")
    prof.validation = dict(val) if isinstance(val, Mapping) else None
    if raw.get("covariance") is not None:
        from clustersim.calibration.covparse import parse_covariance

        prof.covariance = parse_covariance(raw["covariance"], prof)
    return prof


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile file."""
    from clustersim.scenario.yamlio import load_yaml

    raw = load_yaml(path, what="calibration profile")
    return parse_profile(raw, str(path))
