"""Which axis reaches which case, and a point's scenario built from the fields that do.

A sweep crosses its axes with its cases (each variant x each algorithm).  An axis reaches a
case only where it can change what the case runs: ``algorithm.X`` the cases whose algorithm
takes parameter X, ``placement.server`` the cases whose algorithm has servers (a master, a
parameter server's shards: :meth:`AlgorithmDef.servers`).  A case the axis does not reach
runs each of its other points once, with an empty cell in the axis's column, rather than
once per value with identical rows that read as if the value had been tried and made no
difference.

Where an ``algorithm`` or ``algorithm.name`` axis replaces the main algorithm, the main
case's algorithm is the point's, not the one written: an ``algorithm.X`` axis reaches the
main case at the points whose algorithm takes X (:func:`takes_at`), so ``{algorithm.name:
[sync_easgd, async_sgd], algorithm.shards: [1, 2]}`` runs Async SGD at both shard counts
and Sync EASGD (no shards) once, with an empty cell; a ``placement.server`` axis reaches
the main case at the points whose algorithm has servers (:func:`servers_at`).

Why a module of its own: :mod:`clustersim.explore.points` (the point and its run) had grown
to its size limit, and the rule of reach is what the table, the cache and the errors share.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clustersim.explore.points import Case, Point, Study

__all__ = ["plain", "field_parts", "axis_target", "applied", "point_sets", "point_raw",
           "SERVER_FIELDS", "has_servers", "servers_at", "takes_at", "named_takes",
           "reach_is_fixed"]

#: placement fields that place the servers only: an axis on one of them changes nothing for
#: an algorithm without servers (``devices_per_worker`` groups the workers' devices: every
#: case)
SERVER_FIELDS = (("placement", "server"),)
#: axes that change the main algorithm itself: its servers are then the point's, not the
#: case's as written
_ALGORITHM_AXES = (("algorithm",), ("algorithm", "name"))


def plain(obj: Any) -> Any:
    """The raw scenario as plain dicts and lists (picklable, JSON-able, no line info)."""
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


def field_parts(dotted: str) -> tuple[str, ...]:
    """A dotted field name as its parts (``"a.b"`` -> ``("a", "b")``), blanks dropped."""
    return tuple(p for p in str(dotted).strip().split(".") if p)


def _replaces_main(names: Iterable[str]) -> bool:
    """Whether an axis of ``names`` replaces the main algorithm (``algorithm``,
    ``algorithm.name``)."""
    return any(field_parts(n) in _ALGORITHM_AXES for n in names)


def _named(parts: tuple[str, ...], value: Any) -> Any:
    """The algorithm name an ``algorithm`` axis value (a name or a mapping with ``name``)
    or an ``algorithm.name`` value gives the main algorithm (None: it names none)."""
    if parts == ("algorithm",) and isinstance(value, Mapping):
        return value.get("name")
    return value


@cache
def _params_of(name: str) -> tuple[str, ...]:
    """The parameter names of the algorithm ``name``, sorted (empty: no such algorithm)."""
    from clustersim.algorithms.base import get_algorithm
    from clustersim.errors import InputError

    try:
        return tuple(sorted(get_algorithm(name).params))
    except InputError:
        return ()


def takes_at(case: Case, sets: Iterable[tuple[str, Any]] = ()) -> tuple[str, ...]:
    """The parameters that the case's algorithm takes at a point with axis values ``sets``:
    the algorithm as written (:attr:`Case.takes`), or for the main case at a point where an
    ``algorithm``/``algorithm.name`` axis replaces it, the point's algorithm's (with both,
    ``algorithm.name``'s: :func:`point_raw` sets a field's parts after the whole).

    Why: the written algorithm is not what such a point runs.  Reach by the written one
    refused ``algorithm.shards`` beside ``algorithm.name: [sync_easgd, async_sgd]`` (Sync
    EASGD takes no shards) and gave Sync EASGD's points shards it does not take.  Empty: not
    known (a name that is no algorithm, which the point's parse reports) - every
    ``algorithm.X`` then reaches, as for a case built without ``takes``."""
    if case.alg != 0:
        return case.takes
    replaced, name = _point_algorithm(sets)
    if not replaced:
        return case.takes
    return _params_of(name) if isinstance(name, str) else ()


@cache
def _serves(name: str) -> bool:
    """Whether the algorithm ``name`` places servers at its default parameters (a master,
    parameter-server shards: at least one whatever its parameters); True for a name that
    is no algorithm (the point's parse reports it)."""
    from clustersim.algorithms.base import get_algorithm
    from clustersim.errors import InputError

    try:
        defn = get_algorithm(name)
        return defn.servers({k: p.default for k, p in defn.params.items()}) > 0
    except (InputError, KeyError, TypeError, ValueError):
        return True


def _point_algorithm(sets: Iterable[tuple[str, Any]]) -> tuple[bool, Any]:
    """``(replaced, name)``: whether an ``algorithm``/``algorithm.name`` axis value of
    ``sets`` replaces the main algorithm at this point, and the name it gives (with both,
    ``algorithm.name``'s, as :func:`point_raw` sets a field's parts after the whole)."""
    name: Any = None
    replaced = False
    for parts, value in _whole_first((field_parts(k), v) for k, v in sets):
        if parts in _ALGORITHM_AXES:
            replaced, name = True, _named(parts, value)
    return replaced, name


def servers_at(case: Case, sets: Iterable[tuple[str, Any]] = ()) -> bool:
    """Whether the case places servers at a point with axis values ``sets``: as written
    (:attr:`Case.servers`), or for the main case at a point where an ``algorithm``/
    ``algorithm.name`` axis replaces it, the point's algorithm's.

    Why: reach by the case alone ran the replaced main case at every ``placement.server``
    value, so ``{algorithm.name: [sync_easgd, async_sgd], placement.server: [core, node]}``
    simulated Sync EASGD (no server) once per placement, identical rows labelled as if the
    placement had been tried."""
    if case.alg != 0:
        return case.servers
    replaced, name = _point_algorithm(sets)
    if not replaced:
        return case.servers
    return _serves(name) if isinstance(name, str) else True


def named_takes(study: Study) -> set[str]:
    """The parameters taken by the algorithms that the study's ``algorithm`` and
    ``algorithm.name`` axes name: an ``algorithm.X`` axis that one of them takes reaches
    the points that run it, so it is not refused as taken by no case."""
    out: set[str] = set()
    for axis in study.spec.axes:
        parts = field_parts(axis.name)
        if parts in _ALGORITHM_AXES:
            for value in axis.values or ():
                name = _named(parts, value)
                out.update(_params_of(name) if isinstance(name, str) else ())
    return out


def reach_is_fixed(study: Study) -> bool:
    """Whether every axis (but ``workers``) reaches every case at every point, so that the
    design runs its distinct points times the cases.  Not where an ``algorithm.X`` or a
    ``placement.server`` axis meets an axis that replaces the main algorithm: the main
    case's reach then depends on the point (:func:`takes_at`, :func:`servers_at`)."""
    names = [n for n in study.spec.names if n != "workers"]
    params = any(len(p) > 1 and p[0] == "algorithm" and p[1] not in ("name", "label")
                 for p in map(field_parts, names))
    placed = any(field_parts(n) in SERVER_FIELDS for n in names)
    if (params or placed) and _replaces_main(names):
        return False
    return all(axis_target(c, n) is not None for c in study.cases for n in names)


def has_servers(alg: Any, main: bool, axes: tuple[str, ...]) -> bool:
    """Whether the case of the parsed algorithm ``alg`` may place servers at some point:
    its algorithm declares servers for its parameters, or (``main``: the main algorithm) an
    axis of ``axes`` replaces that algorithm, so that the point's algorithm may have them.

    Why the second: the main case's algorithm is then the point's, so whether a
    ``placement.server`` value reaches it is decided per point (:func:`servers_at`);
    dropping the axis from the case would run a master-based point without the placement
    it is labelled with."""
    from clustersim.algorithms.base import get_algorithm

    if main and _replaces_main(axes):
        return True
    return get_algorithm(alg.name).servers(alg.params) > 0


def axis_target(case: Case, name: str, sets: Iterable[tuple[str, Any]] = ()
                ) -> tuple[str | int, ...] | None:
    """Where the axis ``name`` lands in a case's scenario at a point with axis values
    ``sets``, or None where it does not reach the case there.  ``algorithm.X`` reaches every
    case whose algorithm takes parameter X (:func:`takes_at`: the point's algorithm where
    an axis replaces the main one): the main one at ``algorithm.X``, a ``compare`` entry at
    ``compare[i].X`` (each case runs one algorithm, so that is the one the axis must
    change); ``algorithm``, ``algorithm.name`` and ``algorithm.label`` are the main
    algorithm's only.  A :data:`SERVER_FIELDS` axis (``placement.server``) reaches the
    cases whose algorithm has servers."""
    parts = field_parts(name)
    if parts in SERVER_FIELDS and not servers_at(case, sets):
        return None
    if not parts or parts[0] != "algorithm":
        return parts
    if len(parts) == 1 or parts[1] in ("name", "label"):
        return parts if case.alg == 0 else None
    takes = takes_at(case, sets)
    if takes and parts[1] not in takes:
        return None
    return parts if case.alg == 0 else ("compare", case.alg - 1, *parts[1:])


def applied(study: Study, point: Point) -> dict[str, Any]:
    """The point's axis values that its case runs with (the table's axis columns)."""
    case = study.cases[point.case]
    return {k: v for k, v in point.sets if axis_target(case, k, point.sets) is not None}


def point_sets(study: Study, point: Point) -> list[tuple[str, Any]]:
    """The fields a point sets, in the order they are applied: the variant's, the sweep
    point's own (``sweep.at``), then the axes' that reach its case."""
    at = study.at.get(point.workers, {}) if point.workers is not None else {}
    return [*study.cases[point.case].sets, *at.items(), *applied(study, point).items()]


def point_raw(study: Study, point: Point) -> dict[str, Any]:
    """The point's scenario as a raw mapping (all fields set; its sweep: the scaling only).

    Fields are set as ``--set`` sets them (clustersim.scenario.overrides): a missing or
    non-mapping parent becomes a mapping.  The base is copied through JSON (the raw is plain
    JSON values), ten times faster than ``copy.deepcopy``: the cache computes this for every
    point of a resumed sweep.  The axes' fields are set whole before part
    (:func:`_whole_first`)."""
    raw = json.loads(_base_json(study))
    raw["sweep"] = {"scaling": study.scaling, "workers": [1]}  # only the scaling is read
    case = study.cases[point.case]
    at = study.at.get(point.workers, {}) if point.workers is not None else {}
    fields = [(field_parts(k), v) for k, v in (*case.sets, *at.items())]
    fields += _whole_first((target, v) for k, v in point.sets
                           if (target := axis_target(case, k, point.sets)) is not None)
    for parts, value in fields:
        node: Any = raw
        for i, p in enumerate(parts[:-1]):
            if isinstance(node, list) and isinstance(p, int):  # compare[i]
                if isinstance(node[p], str):  # a bare name takes a parameter as {name: ..}
                    node[p] = {"name": node[p]}
                node = node[p]
                continue
            if p == "platform" and i == 0 and isinstance(node.get(p), str):
                # a platform named by its file: its fields are that file's, changed
                node[p] = {"file": node[p]}
            elif p == "algorithm" and i == 0 and isinstance(node.get(p), str):
                node[p] = {"name": node[p]}  # algorithm: sync_easgd, as {name: sync_easgd}
            elif p == "compare" and isinstance(node.get(p), (dict, str)):
                node[p] = [node[p]]
            if not isinstance(node.get(p), (dict, list)) or (
                    isinstance(node.get(p), list) and not isinstance(parts[i + 1], int)):
                node[p] = {}
            node = node[p]
        node[parts[-1]] = plain(value)
    return raw


def _whole_first(fields: Iterable[tuple[tuple, Any]]) -> list[tuple[tuple, Any]]:
    """``(path, value)`` fields, a field before its parts (``algorithm`` before
    ``algorithm.shards``), otherwise in their order.  Why: the axes are set in the order
    they are written, and ``{algorithm.shards: [1, 2], algorithm: [...]}`` set the shards
    and then replaced the whole algorithm - rows labelled shards 2 ran with the mapping's
    own.  A part refines its whole, whatever the order of the axes."""
    return sorted(fields, key=lambda f: len(f[0]))


_BASE_JSON: dict[str, str] = {}


def _base_json(study: Study) -> str:
    text = _BASE_JSON.get(study.token)
    if text is None:
        text = _BASE_JSON[study.token] = json.dumps(study.raw)
    return text
