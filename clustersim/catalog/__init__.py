"""Catalog of devices and link classes with datasheet figures and their sources.

The built-in entries live in ``devices.yaml`` and ``links.yaml`` beside this file so that a
user can read them and copy an entry into a scenario to extend or override it
(``catalog: {devices: {my_gpu: {...}}, links: {...}}``).  Figures are starting points: the
calibration profile overrides efficiencies and link parameters measured on a real machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from clustersim._yaml import safe_load
from clustersim.errors import InputError, allowed_listing, unknown_name
from clustersim.units import UnitError, parse_bandwidth, parse_flops, parse_size, parse_time

__all__ = ["DeviceSpec", "LinkSpec", "TransportSpec", "Catalog", "builtin_catalog"]


@dataclass(frozen=True)
class DeviceSpec:
    """A compute device.  Rates in SI (FLOP/s, bytes/s); efficiencies are fractions of peak."""

    name: str
    peak: float
    mem_bw: float
    memory: float
    peak_fp16: float | None = None
    #: dense tensor-core peaks (datasheet), for the precision table of a GPU calibration
    peak_tf32: float | None = None
    peak_bf16: float | None = None
    efficiency: float = 0.5
    mem_efficiency: float = 0.7
    overhead: float = 10e-6
    source: str = ""
    reduce_rate: float | None = None
    pack_rate: float | None = None
    #: what was measured on a real device of this kind, when, and where it is documented
    measured: str = ""
    #: the devices of this kind in one machine are *one* physical device time-sliced by the
    #: ranks placed on them (several MPI ranks on one GPU); ``share_efficiency``: the
    #: fraction of its throughput they get together when two or more compute at once
    #: (context switches cost the rest).  See :mod:`clustersim.sim.sharing`.
    time_shared: bool = False
    share_efficiency: float = 1.0

    @property
    def reduce_bw(self) -> float:
        """Bytes/s at which the device sums a received buffer into its own.

        An elementwise ``a += b`` reads two buffers and writes one, so the useful rate is a
        third of the sustained memory bandwidth - unless ``reduce_rate`` gives a measured
        figure (calibration fits it from a reduction benchmark: caches, vector units and
        the runtime's own kernel make the real rate differ from the bandwidth rule).
        """
        if self.reduce_rate is not None:
            return self.reduce_rate
        return self.mem_bw * self.mem_efficiency / 3.0

    # ``pack_rate``: bytes/s at which a GEMM's two input operands are packed (read and laid
    # out in cache-sized panels, as GotoBLAS-style libraries do before multiplying).  ``None``
    # (the default) leaves packing out of the roofline; a calibration that measured GEMMs of
    # several shapes fits it (see :func:`clustersim.workload.compute.gemm_pack_time`).


@dataclass(frozen=True)
class LinkSpec:
    """A link class: bandwidth per direction (bytes/s) and one-hop latency (s).

    ``transport``: the catalog transport (``transports.yaml``) that messages limited by this
    link use - what fraction of the line rate they reach and what each costs in software.
    ``cpu_transport``: the transport of this class's links that end at a CPU root port in
    the node layouts (PCIe peer-to-peer through the root complex is slower than through a
    PCIe switch); ``None``: the same as ``transport``.
    """

    name: str
    bandwidth: float
    latency: float
    duplex: bool = True
    source: str = ""
    transport: str | None = None
    cpu_transport: str | None = None
    #: the numeric fields no published measurement backs (``assumed: [latency]``)
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True)
class TransportSpec:
    """How a software stack drives a link: ``efficiency`` (fraction of the line rate a lone
    large message reaches) and ``overhead`` (seconds per message before the first byte
    leaves, on top of the hop latencies).  Datasheets give line rates; real jobs see these.

    ``inline`` and ``dma_read``: an RDMA NIC takes a message of up to ``inline`` bytes inside
    the work request the CPU writes to it, but must fetch a longer one from host memory
    across PCIe before it can send - a read round trip that a message above ``inline`` pays
    on top of ``overhead`` (``dma_read`` seconds; 0: no such step, one cost for every size).
    Why a field and not a fitted protocol table: the round trip is a published PCIe
    measurement independent of the NIC's own latency figures, so the size at which small
    RDMA messages get slower is predicted, not fitted."""

    name: str
    efficiency: float
    overhead: float
    source: str = ""
    inline: float = 0.0
    dma_read: float = 0.0
    #: the numeric fields no published measurement backs (``assumed: [overhead]``): a
    #: prediction that uses one says so (:mod:`clustersim.scenario.assumed`)
    assumed: tuple[str, ...] = ()


_DEVICE_FIELDS = {"peak", "mem_bw", "memory", "peak_fp16", "peak_tf32", "peak_bf16",
                  "efficiency", "mem_efficiency", "overhead", "source", "reduce_rate",
                  "pack_rate", "measured", "time_shared", "share_efficiency"}
_LINK_FIELDS = {"bandwidth", "latency", "duplex", "source", "transport", "cpu_transport",
                "assumed"}
_TRANSPORT_FIELDS = {"efficiency", "overhead", "source", "inline", "dma_read", "assumed"}
#: the fields an entry's ``assumed:`` may name: its figures
ASSUMABLE = {"link": ("bandwidth", "latency"),
             "transport": ("efficiency", "overhead", "inline", "dma_read")}


def _fraction(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnitError(f"{field} must be a number between 0 and 1, not {value!r}")
    if not 0 < value <= 1:
        raise UnitError(f"{field} must be in (0, 1], not {value!r}")
    return float(value)


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise UnitError(f"{field} must be true or false, not {value!r}")
    return value


def _assumed(kind: str) -> Callable[[Any, str], tuple[str, ...]]:
    def parse(value: Any, field: str) -> tuple[str, ...]:
        allowed = ASSUMABLE[kind]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(v in allowed for v in value):
            raise UnitError(f"assumed must be a list of this {kind}'s figures "
                            f"({', '.join(allowed)}), not {value!r}")
        return tuple(dict.fromkeys(value))
    return parse


def _transport_name(value: Any, field: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise UnitError(f"{field} must be a transport name, not {value!r}")
    return value


#: field -> parser (value, field name) of each kind of catalog entry; a field not named here
#: but allowed is free text.  One table per kind, one routine for all three kinds: devices,
#: links and transports are read (and their errors worded) the same way.
_PARSERS: dict[str, dict[str, Callable[[Any, str], Any]]] = {
    "device": {
        **dict.fromkeys(("peak", "peak_fp16", "peak_tf32", "peak_bf16"),
                        lambda v, f: parse_flops(v)),
        **dict.fromkeys(("mem_bw", "reduce_rate", "pack_rate"), lambda v, f: parse_bandwidth(v)),
        "memory": lambda v, f: parse_size(v, allow_zero=False),
        **dict.fromkeys(("efficiency", "mem_efficiency", "share_efficiency"), _fraction),
        "overhead": lambda v, f: parse_time(v),
        "time_shared": _flag,
    },
    "link": {
        "bandwidth": lambda v, f: parse_bandwidth(v),
        "latency": lambda v, f: parse_time(v),
        "duplex": _flag,
        **dict.fromkeys(("transport", "cpu_transport"), _transport_name),
        "assumed": _assumed("link"),
    },
    "transport": {"efficiency": _fraction, "overhead": lambda v, f: parse_time(v),
                  "inline": lambda v, f: parse_size(v), "dma_read": lambda v, f: parse_time(v),
                  "assumed": _assumed("transport")},
}


def _spec_from_dict(kind: str, cls: type, allowed: Sequence[str], required: set[str],
                    name: str, raw: dict[str, Any], base: Any, path: tuple) -> Any:
    """One catalog entry of ``kind`` from its mapping; with ``base``, only the given fields
    override it (``like:``), without, ``required`` must all be there."""
    if not isinstance(raw, dict):
        raise InputError(f"{kind} {name!r} must be a mapping of fields", path=path)
    parsers = _PARSERS[kind]
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        where = (*path, key)
        if key not in allowed:
            raise unknown_name(f"{kind} field", key, allowed, path=where)
        try:
            parse = parsers.get(key)
            kwargs[key] = parse(value, key) if parse else str(value)
        except UnitError as exc:
            raise InputError(str(exc), path=where) from None
    if base is not None:
        if "assumed" not in kwargs and getattr(base, "assumed", ()):
            # a figure given here is the user's, not the base entry's assumption
            kwargs["assumed"] = tuple(f for f in base.assumed if f not in kwargs)
        return replace(base, name=name, **kwargs)
    missing = required - set(kwargs)
    if missing:
        raise InputError(f"{kind} {name!r} needs fields {sorted(missing)}", path=path)
    return cls(name=name, **kwargs)


def device_from_dict(name: str, raw: dict[str, Any], base: DeviceSpec | None = None,
                     path: tuple = ()) -> DeviceSpec:
    """Build a :class:`DeviceSpec`; with ``base``, only the given fields override it."""
    return _spec_from_dict("device", DeviceSpec, _DEVICE_FIELDS, {"peak", "mem_bw", "memory"},
                           name, raw, base, path)


def link_from_dict(name: str, raw: dict[str, Any], base: LinkSpec | None = None,
                   path: tuple = ()) -> LinkSpec:
    """Build a :class:`LinkSpec`; with ``base``, only the given fields override it."""
    return _spec_from_dict("link", LinkSpec, _LINK_FIELDS, {"bandwidth", "latency"},
                           name, raw, base, path)


def transport_from_dict(name: str, raw: dict[str, Any], base: TransportSpec | None = None,
                        path: tuple = ()) -> TransportSpec:
    """Build a :class:`TransportSpec`; with ``base``, only the given fields override it."""
    return _spec_from_dict("transport", TransportSpec, _TRANSPORT_FIELDS,
                           {"efficiency", "overhead"}, name, raw, base, path)


_SECTIONS = ("devices", "links", "transports")


@dataclass(frozen=True)
class Catalog:
    """Devices, link classes and transports by name.  Immutable: ``extended`` returns a new
    catalog."""

    devices: dict[str, DeviceSpec]
    links: dict[str, LinkSpec]
    transports: dict[str, TransportSpec] = field(default_factory=dict)

    def device(self, name: str, **loc: Any) -> DeviceSpec:
        try:
            return self.devices[name]
        except (KeyError, TypeError):  # TypeError: a list or mapping where a name belongs
            raise unknown_name("device", name, self.devices, **loc) from None

    def link(self, name: str, **loc: Any) -> LinkSpec:
        try:
            return self.links[name]
        except (KeyError, TypeError):
            raise unknown_name("link class", name, self.links, **loc) from None

    def transport(self, name: str, **loc: Any) -> TransportSpec:
        try:
            return self.transports[name]
        except (KeyError, TypeError):
            raise unknown_name("transport", name, self.transports, **loc) from None

    def check_link(self, spec: LinkSpec, path: tuple) -> LinkSpec:
        """``spec`` if the transports it names are in this catalog, else an InputError."""
        for key in ("transport", "cpu_transport"):
            name = getattr(spec, key)
            if name is not None:
                self.transport(name, path=(*path, key))
        return spec

    def extended(self, raw: dict[str, Any] | None, path: tuple = ("catalog",)) -> Catalog:
        """Add or override entries from a ``{devices:, links:, transports:}`` mapping.

        An entry whose name exists, or that says ``like: <name>``, only overrides fields.
        """
        if not raw:
            return self
        if not isinstance(raw, dict):
            raise InputError("catalog must be a mapping with 'devices', 'links' and/or "
                             "'transports'", path=path)
        for key in raw:
            if key not in _SECTIONS:
                raise unknown_name("catalog section", key, _SECTIONS, path=(*path, key))
        # transports first: a link entry may name one
        transports = _extended(self.transports, raw, "transports", self.transport,
                               transport_from_dict, path)
        devices = _extended(self.devices, raw, "devices", self.device, device_from_dict, path)
        links = _extended(self.links, raw, "links", self.link, link_from_dict, path)
        out = Catalog(devices, links, transports)
        for name in (raw.get("links") or {}):
            out.check_link(links[name], (*path, "links", name))
        return out


def _extended(current: dict[str, Any], raw: dict[str, Any], section: str,
              lookup: Callable[..., Any], from_dict: Callable[..., Any],
              path: tuple) -> dict[str, Any]:
    """``current`` with the entries of ``raw[section]`` added or overriding (``like:`` starts
    from another entry); the section must be a mapping of names to field mappings."""
    entries = raw.get(section) or {}
    if not isinstance(entries, dict):
        raise InputError(f"catalog {section} must be a mapping of names to fields, not "
                         f"{entries!r}", path=(*path, section))
    out = dict(current)
    for name, entry in entries.items():
        entry = dict(entry) if isinstance(entry, dict) else entry
        base = out.get(name)
        if isinstance(entry, dict) and "like" in entry:
            like = entry.pop("like")
            where = (*path, section, name, "like")
            if isinstance(like, str) and like in entries and like not in current:
                raise _like_beside(like, section, current, where)
            base = lookup(like, path=where)
        out[name] = from_dict(name, entry, base, (*path, section, name))
    return out


_NOUNS = {"devices": "device", "links": "link class", "transports": "transport"}


def _like_beside(like: str, section: str, current: dict[str, Any], where: tuple) -> InputError:
    """``like:`` naming an entry of the same catalog: it starts from the catalog this one
    extends (built in, and for a platform file the scenario's), where that name is not -
    "unknown device 'mydev'" read as if the entry beside it had not been seen."""
    noun = _NOUNS[section]
    builtin = set(getattr(builtin_catalog(), section))
    which = "built-in" if set(current) == builtin else "built-in or scenario catalog"
    return InputError(f"must name a {which} {noun} to start from; {like!r} is defined in "
                      f"this same catalog, which like: cannot start from - copy its fields "
                      f"into this entry, or start from the {noun} it starts from (allowed: "
                      f"{allowed_listing(current)})", path=where)


@lru_cache(maxsize=1)
def builtin_catalog() -> Catalog:
    """The shipped catalog (parsed once per process)."""
    pkg = resources.files(__package__)
    raw_dev = safe_load(pkg.joinpath("devices.yaml").read_text())
    raw_link = safe_load(pkg.joinpath("links.yaml").read_text())
    raw_tr = safe_load(pkg.joinpath("transports.yaml").read_text())
    devices = {n: device_from_dict(n, d, path=("devices.yaml", n)) for n, d in raw_dev.items()}
    links = {n: link_from_dict(n, d, path=("links.yaml", n)) for n, d in raw_link.items()}
    transports = {n: transport_from_dict(n, d, path=("transports.yaml", n))
                  for n, d in raw_tr.items()}
    cat = Catalog(devices, links, transports)
    for n, spec in links.items():
        cat.check_link(spec, ("links.yaml", n))
    return cat
