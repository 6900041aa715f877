"""Where a field belongs: the index section -> fields of a scenario, read from its readers.

A field written in the wrong section (``workload: {overhead: 5 us}``) is refused as unknown
there; the refusal says where it does belong (``'overhead' is a field of network:
(network.overhead)``) instead of a loose "did you mean" to an unrelated field (QA 18).

The index is not a hand-written list, which would drift from the schema: each section's own
reader is handed a mapping with one key no section has, and the "unknown field" refusal it
raises (:func:`clustersim.errors.unknown_name`) carries the fields it allows.  Algorithm
parameters come from the algorithm registry, the scenario's top sections from the schema.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from clustersim.errors import InputError, unknown_name

__all__ = ["field_homes", "home_text", "rehome"]

#: a key no section allows: it makes each reader list what it does allow
_PROBE = "\x00where"

#: homes listed in a message at most (a name such as 'source' is in many sections)
_MAX_HOMES = 4


def _allowed(read: Callable[[dict[str, Any]], Any], raw: dict[str, Any] | None = None
             ) -> tuple[str, ...]:
    """The fields ``read`` allows: its refusal of :data:`_PROBE` lists them.  A reader that
    checks something else first yields nothing, which only leaves its section out of hints."""
    try:
        read(raw if raw is not None else {_PROBE: 1})
    except InputError as exc:
        if exc.unknown is not None and exc.unknown[1] == _PROBE:
            return exc.unknown[2]
    except Exception:  # noqa: BLE001 - a hint must never turn a refusal into a traceback
        pass
    return ()


def _sections() -> dict[str, tuple[str, ...]]:
    """Section (dotted, as a user writes it) -> its fields, each read from its reader."""
    from clustersim.catalog import builtin_catalog
    from clustersim.convergence.profile import FIELDS as CONVERGENCE_FIELDS
    from clustersim.platform.builders import TOPOLOGIES
    from clustersim.platform.describe import build_platform
    from clustersim.scenario import schema
    from clustersim.scenario.benchmark import parse_benchmark
    from clustersim.scenario.emulation import parse_emulation
    from clustersim.scenario.placement import parse_placement
    from clustersim.workload import ComputeOverrides, InputPipeline
    from clustersim.workload.fusion import parse_fusion

    out: dict[str, tuple[str, ...]] = {
        "": schema._TOP,
        "network": _allowed(schema._parse_network),
        "workload": _allowed(lambda r: schema._parse_workload(r)),
        "workload.compute": _allowed(lambda r: ComputeOverrides.from_dict(r)),
        "workload.input": _allowed(lambda r: InputPipeline.from_dict(r)),
        "workload.fusion": _allowed(lambda r: parse_fusion(r, ())),
        "workload.convergence": tuple(CONVERGENCE_FIELDS),
        "sweep": _allowed(schema._parse_sweep),
        "run": _allowed(schema._parse_run),
        "run.emulation": _allowed(lambda r: parse_emulation(r, ())),
        "benchmark": _allowed(parse_benchmark),
        "placement": _allowed(parse_placement),
    }
    catalog = builtin_catalog()
    for topo in TOPOLOGIES:  # each topology takes its own fields
        fields = _allowed(lambda r: build_platform(r, catalog),
                          {"topology": topo, _PROBE: 1})
        out[f"platform|{topo}"] = tuple(f for f in fields if f != "topology")
    for sec in ("devices", "links", "transports"):
        out[f"catalog.{sec}.NAME"] = _allowed(
            lambda r, sec=sec: catalog.extended({sec: {"\x00new": r}}))
    return out


@lru_cache(maxsize=1)
def field_homes() -> dict[str, tuple[tuple[str, str], ...]]:
    """Field name -> (noun, place) for each place it belongs, as a message names them:
    ``("field", "network: (network.overhead)")``, ``("field", "platform:
    (platform.hosts)")``, ``("parameter", "algorithm tau_sgd (algorithm.tau)")``."""
    from clustersim.algorithms.base import list_algorithms

    places: dict[str, list[tuple[str, str]]] = {}
    topologies: dict[str, list[str]] = {}
    for section, fields in _sections().items():
        for name in fields:
            if section.startswith("platform|"):
                topologies.setdefault(name, []).append(section.split("|", 1)[1])
            elif section:
                places.setdefault(name, []).append(
                    ("field", f"{section.split('.NAME')[0]}: ({section}.{name})"))
            else:
                places.setdefault(name, []).append(("section", f"the top level ({name}:)"))
    for name, topos in topologies.items():
        # always which topologies: "a field of platform:" beside a node platform's refusal
        # of 'link' read as if that platform took it
        shown = ", ".join(topos[:3]) + (", …" if len(topos) > 3 else "")
        places.setdefault(name, []).append(
            ("field", f"platform: (platform.{name}, topology {shown})"))
    algos: dict[str, list[str]] = {}
    for algo, defn in list_algorithms().items():
        for name in defn.params:
            algos.setdefault(name, []).append(algo)
    for name, names in algos.items():
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        noun = "algorithms" if len(names) > 1 else "algorithm"
        places.setdefault(name, []).append(("parameter",
                                            f"{noun} {shown} (algorithm.{name})"))
    return {name: tuple(p) for name, p in places.items()}


def _either(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def home_text(name: str) -> str:
    """`` — 'overhead' is a field of network: (network.overhead)``, or ``""`` when the name
    is a field nowhere in a scenario."""
    homes = field_homes().get(name, ())[:_MAX_HOMES]
    if not homes:
        return ""
    more = len(field_homes()[name]) - len(homes)
    parts = []
    for noun in ("section", "field", "parameter"):
        places = [place for n, place in homes if n == noun]
        if places:
            what = "a scenario section at" if noun == "section" else f"a {noun} of"
            parts.append(f"{what} {_either(places)}")
    tail = f" (and {more} more)" if more else ""
    return f" — {name!r} is {'; or '.join(parts)}{tail}"


def rehome(exc: InputError) -> InputError:
    """``exc`` reworded with where its unknown field belongs, when it is an "unknown
    field/parameter/section" refusal of a name that is a field elsewhere; else ``exc``."""
    if exc.unknown is None or exc.file is not None:
        return exc  # a platform file's own refusal: scenario sections are no home there
    kind, name, allowed = exc.unknown
    if not any(w in kind for w in ("field", "parameter", "section")):
        return exc  # an unknown *value* (a model, a topology): no section holds it
    home = home_text(name) or _near_home(name, allowed)
    if not home:
        return exc
    return unknown_name(kind, name, allowed, home=home, file=exc.file, path=exc.path,
                        line=exc.line, origin=exc.origin)


def _near_home(name: str, allowed: tuple[str, ...]) -> str:
    """`` — did you mean 'overhead'?  It is a field of network: (network.overhead)`` for a
    misspelled field whose near-exact match lives in another section, when nothing in its
    own section is as close; else ``""``.

    Why: a typo in the wrong section (``workload: {overhed: 5 us}``) matched nothing at
    home but a loose likeness ("did you mean 'convergence'?"), and the exact-name index
    above finds only names spelled right."""
    import difflib

    from clustersim.errors import CLOSE_BESIDE_HOME

    def alike(other: str) -> float:
        return difflib.SequenceMatcher(None, name.lower(), other.lower()).ratio()

    own = max((alike(a) for a in allowed), default=0.0)
    if own >= CLOSE_BESIDE_HOME:  # a typo of a field at home: its own "did you mean" says it
        return ""
    starts = _own_prefix(name, allowed)
    if starts:  # 'lat' of a link is its 'latency', not sweep's 'at' (audit L3)
        return f" — did you mean {_either([repr(a) for a in starts])}?"
    # ties go to the same letters ('ndoes' -> nodes, not notes), then the shorter name
    best = max((n for n in field_homes() if n not in allowed),
               key=lambda n: (alike(n), sorted(n) == sorted(name), -len(n)), default=None)
    if best is None or alike(best) < max(CLOSE_BESIDE_HOME, own + 1e-9):
        return ""  # nothing elsewhere closer than the section's own fields
    if (len(best) < len(name) and not best.startswith(name.lower()[:1])) or len(best) < 3:
        # 'at' for 'lat' (network has no latency): a shorter name that does not even start
        # alike is a coincidence of letters, not the field meant (audit C M5)
        return ""
    where = home_text(best).split(" is ", 1)[1]
    return f" — did you mean {best!r}? It is {where}"


def _own_prefix(name: str, allowed: tuple[str, ...]) -> list[str]:
    """The section's own fields that ``name`` (2 letters or more, case aside) begins, at most
    three, shortest first: an abbreviation of a field at home is a clearer match than a
    near spelling of a field elsewhere, however alike the letters ('lat' is 0.86 like 'at'
    and 0.6 like 'latency')."""
    low = name.lower()
    if len(low) < 2:
        return []
    return sorted((a for a in allowed if a.lower().startswith(low) and a.lower() != low),
                  key=len)[:3]
