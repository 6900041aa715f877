"""Platforms described in YAML: ``topology: <builder>`` plus that builder's parameters.

Example (``topologies/*.yaml`` has more)::

    topology: leaf_spine
    leaves: 8
    spines: 4
    hosts_per_leaf: 16
    device: v100                      # a catalog name, or inline {like: v100, peak: 14 TFLOP/s}
    host_link: eth25g                 # a catalog name, or inline {bandwidth: 25 Gb/s, latency: 3 us}
    uplink: eth100g
    node: {devices: 2, layout: pcie_tree, sockets: 2, devices_per_switch: 0, gpudirect: false}

Why a thin layer over the builders: the builders already validate their arguments and raise
:class:`~clustersim.errors.InputError` naming the parameter, so this module only turns names
and unit strings into specs (through the catalog and :mod:`clustersim.units`) and prefixes the
location.  The allowed fields of a topology are the keyword parameters of its builder, read
from its signature - one source of truth.  ``about``, ``notes`` and ``sources`` are free text
for the reader; ``catalog:`` adds or overrides devices and link classes for this platform;
``routing:`` picks the routing policy (``routing: dmodk`` or ``{policy: ecmp, seed: 3}``, see
:mod:`clustersim.platform.policies`).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from clustersim._gc import paused
from clustersim.catalog import (
    Catalog,
    DeviceSpec,
    LinkSpec,
    builtin_catalog,
    device_from_dict,
    link_from_dict,
)
from clustersim.errors import InputError, unknown_name
from clustersim.platform.builders import TOPOLOGIES, list_topologies
from clustersim.platform.explicit import ExplicitLink, ExplicitNode, explicit
from clustersim.platform.fabric import MAX_COUNT
from clustersim.platform.libraries import check_library
from clustersim.platform.model import Platform
from clustersim.platform.node import DEFAULT_LINKS, LAYOUTS, NodeSpec
from clustersim.platform.policies import parse_routing

__all__ = ["build_platform", "load_platform", "list_topologies", "topology_fields",
           "COMMON_FIELDS", "parse_node", "parse_device", "parse_link"]

_TEXT_FIELDS = ("about", "notes", "sources")
_LINK_PARAMS = ("link", "host_link", "uplink", "local_link", "global_link")
_NODE_LINKS = ("pcie", "intersocket", "nvlink", "nic_link", "internal")
_NODE_FIELDS = ("devices", "layout", "device", "nics", "gpudirect", "sockets",
                "devices_per_switch", *_NODE_LINKS)


def build_platform(raw: dict, catalog: Catalog, path: tuple = ("platform",)) -> Platform:
    """Build the platform a parsed YAML mapping describes; errors are located under ``path``.

    ``library:`` (optional: mpich, openmpi, openmpi-4.1, openmpi-4.0, nccl) declares the
    communication library the machine's jobs use: the collective algorithm ``auto`` runs its
    choices (:mod:`clustersim.collectives.selection`).
    """
    path = tuple(path)
    if not isinstance(raw, dict):
        raise InputError(f"a platform must be a mapping with a 'topology' field, not "
                         f"{type(raw).__name__}", path=path)
    if "library" in raw:
        library = check_library(raw["library"], (*path, "library"))
        plat = build_platform({k: v for k, v in raw.items() if k != "library"}, catalog, path)
        plat.library = library
        return plat
    if "catalog" in raw:
        catalog = catalog.extended(raw["catalog"], path=(*path, "catalog"))
    if "topology" not in raw:
        raise InputError(f"missing required field 'topology' (allowed: "
                         f"{', '.join(TOPOLOGIES)})", path=(*path, "topology"))
    topo = raw["topology"]
    if not isinstance(topo, str) or topo not in TOPOLOGIES:
        raise unknown_name("topology", str(topo), TOPOLOGIES, path=(*path, "topology"))
    routing = None
    if "routing" in raw:  # checked before building: a bad policy fails fast
        routing = parse_routing(raw["routing"], topo, (*path, "routing"))
    with paused():  # hundreds of thousands of node and link tables, no cycles (clustersim._gc)
        if topo == "explicit":
            platform = _build_explicit(raw, catalog, path)
        else:
            platform = _build_topology(topo, raw, catalog, path)
    platform = _with_transports(platform, catalog, path)
    if routing is not None and not routing.is_default:
        platform = platform.with_routing(routing)
    return platform


def _build_topology(topo: str, raw: dict, catalog: Catalog, path: tuple) -> Platform:
    fn = TOPOLOGIES[topo][0]
    params = {n: p for n, p in inspect.signature(fn).parameters.items()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        where = (*path, key)
        if key in ("topology", "catalog", "routing", *_TEXT_FIELDS):
            continue
        if key not in params:
            raise unknown_name(f"{topo} field", str(key),
                               [*params, *COMMON_FIELDS],
                               path=where)
        kwargs[key] = _parse_param(key, value, catalog, where)
        if params[key].annotation in ("str", str) and not isinstance(kwargs[key], str):
            # a choice (arrangement, layout, ...): a list or mapping there would reach a
            # membership test and fail as an unhashable type instead of naming the field
            raise InputError(f"{key} must be a name (a string), not {value!r}", path=where)
    for pname, p in params.items():
        if p.default is inspect.Parameter.empty and pname not in kwargs:
            required = [n for n, q in params.items() if q.default is inspect.Parameter.empty]
            raise InputError(f"topology {topo!r} needs field {pname!r} (required: "
                             f"{', '.join(required)})", path=(*path, pname))
    try:
        return fn(**kwargs)
    except InputError as exc:
        raise exc.located(prefix=path) from None


def _with_transports(platform: Platform, catalog: Catalog, path: tuple) -> Platform:
    """Attach ``transport_specs`` (name -> :class:`~clustersim.catalog.TransportSpec`) for the
    transports the platform's links name, from the catalog they were described with - the
    scenario turns them into :class:`~clustersim.network.params.NetworkParams` tables."""
    specs = {}
    builtin = builtin_catalog().transports
    for name in sorted({t for t in platform.link_transport if t is not None}):
        spec = catalog.transports.get(name) or builtin.get(name)
        if spec is None:
            raise unknown_name("transport", name, catalog.transports, path=path)
        specs[name] = spec
    platform.transport_specs = specs
    return platform


def load_platform(file: str | Path, catalog: Catalog | None = None) -> Platform:
    """Read a topology file; errors carry the file name and, when known, the line."""
    from clustersim.scenario.yamlio import line_of, load_yaml

    file = str(file)
    raw = load_yaml(file, what="platform file")  # the limits and rules of every input file
    built = raw
    if isinstance(raw, dict) and "name" not in raw:
        built = {**raw, "name": Path(file).stem}
    try:
        return build_platform(built, catalog or builtin_catalog(), path=())
    except InputError as exc:
        line = exc.line if exc.line is not None else line_of(raw, exc.path)
        raise exc.located(file=file, line=line) from None


# -- field parsers --------------------------------------------------------------------------
def parse_device(value: Any, catalog: Catalog, path: tuple) -> DeviceSpec:
    """A catalog device name, or an inline mapping (``like: k80`` to start from an entry)."""
    if isinstance(value, str):
        return catalog.device(value, path=path)
    if isinstance(value, dict):
        raw = dict(value)
        base = catalog.device(raw.pop("like"), path=(*path, "like")) if "like" in raw else None
        name = str(raw.pop("name", base.name if base else "custom"))
        return device_from_dict(name, raw, base, path)
    raise InputError(f"device must be a catalog name ({', '.join(sorted(catalog.devices))}) "
                     f"or a mapping of fields, not {value!r}", path=path)


def parse_link(value: Any, catalog: Catalog, path: tuple) -> LinkSpec:
    """A catalog link class name, or an inline mapping (``like: eth10g`` to start from one)."""
    if isinstance(value, str):
        return catalog.link(value, path=path)
    if isinstance(value, dict):
        raw = dict(value)
        base = catalog.link(raw.pop("like"), path=(*path, "like")) if "like" in raw else None
        name = str(raw.pop("name", base.name if base else "custom"))
        return catalog.check_link(link_from_dict(name, raw, base, path), path)
    raise InputError(f"link must be a catalog name ({', '.join(sorted(catalog.links))}) or a "
                     f"mapping like {{bandwidth: 10 Gb/s, latency: 1 us}}, not {value!r}",
                     path=path)


def parse_node(value: Any, catalog: Catalog, path: tuple) -> NodeSpec:
    """A ``node:`` mapping into a :class:`NodeSpec` (links and device through the catalog)."""
    if not isinstance(value, dict):
        raise InputError(f"node must be a mapping with fields {', '.join(_NODE_FIELDS)}, not "
                         f"{value!r}", path=path)
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        where = (*path, key)
        if key not in _NODE_FIELDS:
            raise unknown_name("node field", str(key), _NODE_FIELDS, path=where)
        if key in _NODE_LINKS:
            kwargs[key] = parse_link(item, catalog, where)
        elif key == "device":
            kwargs[key] = parse_device(item, catalog, where)
        elif key == "layout" and not isinstance(item, str):
            raise unknown_name("layout", str(item), LAYOUTS, path=where)
        else:
            kwargs[key] = _whole(item)
    # the links the mapping leaves out, from the catalog in force (the scenario's over the
    # platform file's over the built-in one), as a name given explicitly is resolved: an
    # override of a class then reaches every link of it (QA 12 F7)
    for key, name in DEFAULT_LINKS.items():
        if key not in kwargs:
            kwargs[key] = catalog.link(name, path=(*path, key))
    try:
        return NodeSpec(**kwargs)
    except InputError as exc:
        raise exc.located(prefix=path) from None


def _parse_param(key: str, value: Any, catalog: Catalog, where: tuple) -> Any:
    if key in _LINK_PARAMS:
        return parse_link(value, catalog, where)
    if key == "device":
        return parse_device(value, catalog, where)
    if key == "node":
        return parse_node(value, catalog, where)
    if key == "dims" and isinstance(value, list):
        return tuple(_whole(v) for v in value)
    if key == "name" and not isinstance(value, str):
        raise InputError(f"name must be a string, not {value!r}", path=where)
    return _whole(value)  # counts and choices: the builder checks them and names the field


def _whole(value: Any) -> Any:
    """``1e3`` (a float in YAML 1.2) as the count 1000; anything else unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


#: what every platform file takes besides its topology's own fields
COMMON_FIELDS = ("routing", "catalog", "library", *_TEXT_FIELDS)
_REQUIRED = inspect.Parameter.empty
#: the fields of ``topology: explicit`` besides those, with their defaults
#: (:func:`_build_explicit` reads them itself, not through a builder's signature)
_EXPLICIT_FIELDS = {"nodes": _REQUIRED, "links": _REQUIRED, "device": None, "link": None,
                    "name": "explicit"}


def topology_fields(topo: str) -> list[str]:
    """The fields a platform file of ``topology: topo`` takes besides
    :data:`COMMON_FIELDS`: required ones bare, optional ones ``field=default`` - read off the
    builder's signature, as :func:`_build_topology` reads the file.

    Why from the signature: it is what the reader accepts, so ``clustersim list topologies``
    cannot drift from it (a hand-written list in the docs had left out eight fields)."""
    if topo == "explicit":
        fields = _EXPLICIT_FIELDS
    else:
        fields = {n: p.default
                  for n, p in inspect.signature(TOPOLOGIES[topo][0]).parameters.items()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return [n if d is _REQUIRED else f"{n}={'none' if d is None else d}"
            for n, d in fields.items()]


def _build_explicit(raw: dict, catalog: Catalog, path: tuple) -> Platform:
    allowed = ("topology", *_EXPLICIT_FIELDS, *COMMON_FIELDS)
    for key in raw:
        if key not in allowed:
            raise unknown_name("explicit field", str(key), allowed,
                               path=(*path, key))
    for key in ("nodes", "links"):
        if key not in raw:
            raise InputError(f"topology 'explicit' needs field {key!r}", path=(*path, key))
        if not isinstance(raw[key], list):
            raise InputError(f"{key} must be a list", path=(*path, key))
    device = parse_device(raw["device"], catalog, (*path, "device")) if "device" in raw else None
    link = parse_link(raw["link"], catalog, (*path, "link")) if "link" in raw else None
    nodes = [_explicit_node(n, i, device, catalog, (*path, "nodes", i))
             for i, n in enumerate(raw["nodes"])]
    links = [_explicit_link(x, link, catalog, (*path, "links", i))
             for i, x in enumerate(raw["links"])]
    name = raw.get("name", "explicit")
    if not isinstance(name, str):
        raise InputError(f"name must be a string, not {name!r}", path=(*path, "name"))
    try:
        return explicit(nodes, links, name=name)
    except InputError as exc:
        raise exc.located(prefix=path) from None


def _explicit_node(raw: Any, i: int, device: DeviceSpec | None, catalog: Catalog,
                   path: tuple) -> ExplicitNode:
    fields = ("name", "kind", "device", "host")
    if not isinstance(raw, dict):
        raise InputError(f"a node must be a mapping with fields {', '.join(fields)}, not "
                         f"{raw!r}", path=path)
    for key in raw:
        if key not in fields:
            raise unknown_name("node field", str(key), fields, path=(*path, key))
    if "name" not in raw:
        raise InputError("node needs a 'name'", path=(*path, "name"))
    # a node that names a device or a machine is a device unless it says otherwise
    kind = raw.get("kind", "device" if ("device" in raw or "host" in raw) else "switch")
    if not isinstance(kind, str):
        raise InputError(f"kind must be a string, not {kind!r}", path=(*path, "kind"))
    dev = parse_device(raw["device"], catalog, (*path, "device")) if "device" in raw else None
    if kind == "device" and dev is None:
        if device is None:
            raise InputError("device node needs a 'device' (or give a top-level 'device')",
                             path=(*path, "device"))
        dev = device
    host = _whole(raw.get("host"))
    if host is not None and (isinstance(host, bool) or not isinstance(host, int)
                             or not 0 <= host <= MAX_COUNT):
        raise InputError(f"host must be an integer >= 0 and <= {MAX_COUNT:,}, not {host!r}",
                         path=(*path, "host"))
    if not isinstance(raw["name"], (str, int)) or isinstance(raw["name"], bool):
        raise InputError(f"name must be a string, not {raw['name']!r}", path=(*path, "name"))
    return ExplicitNode(name=str(raw["name"]), kind=kind, device=dev, host=host)


def _explicit_link(raw: Any, default: LinkSpec | None, catalog: Catalog,
                   path: tuple) -> ExplicitLink:
    """``[a, b]``, ``[a, b, link]`` or ``{between: [a, b], link: ..., cost: 1}``."""
    spec_raw: Any = None
    cost: Any = 1
    if isinstance(raw, list) and len(raw) in (2, 3):
        ends = raw[:2]
        spec_raw = raw[2] if len(raw) == 3 else None
        spec_path = (*path, 2)
    elif isinstance(raw, dict):
        for key in raw:
            if key not in ("between", "link", "cost"):
                raise unknown_name("link field", str(key), ("between", "link", "cost"),
                                   path=(*path, key))
        ends = raw.get("between")
        if not isinstance(ends, list) or len(ends) != 2:
            raise InputError("between must list the two nodes a link joins, like [gpu0, sw]",
                             path=(*path, "between"))
        spec_raw = raw.get("link")
        cost = raw.get("cost", 1)
        spec_path = (*path, "link")
    else:
        raise InputError(f"a link is [a, b], [a, b, link class] or {{between: [a, b], link: "
                         f"...}}, not {raw!r}", path=path)
    if spec_raw is None:
        if default is None:
            raise InputError("link needs a link class (or give a top-level 'link')", path=path)
        spec = default
    else:
        spec = parse_link(spec_raw, catalog, spec_path)
    cost = _whole(cost)
    if isinstance(cost, bool) or not isinstance(cost, int) or not 1 <= cost <= MAX_COUNT:
        raise InputError(f"cost must be an integer >= 1 and <= {MAX_COUNT:,}, not {cost!r}",
                         path=(*path, "cost"))
    if not all(isinstance(e, (str, int)) and not isinstance(e, bool) for e in ends):
        raise InputError(f"a link joins two node names, not {ends!r}", path=path)
    return ExplicitLink(str(ends[0]), str(ends[1]), spec, cost)
