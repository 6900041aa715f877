"""The public door: :func:`build_schedule`, :func:`list_algorithms`, :func:`describe_algorithm`.

Every (op, algorithm) pair maps to a builder that fills a :class:`~.plan.Plan`; this module
validates the request, picks the segmentation, and adds what belongs to the *op* rather than
the algorithm: nccl-tests' bus-bandwidth factor and the fp16 conversion bytes.

fp16 (``fp16=True`` or an ``...16`` algorithm): every transfer carries half the bytes (the
buffer travels as float16 and is summed as float16, as Theano-MPI's asa16 and nccl16 do), and
``Schedule.convert_bytes`` is the fp32 bytes the busiest rank casts - its input down to fp16
plus its result back up (``2n`` for allreduce, ``n + n/p`` for reduce_scatter, ...).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from clustersim._gc import paused
from clustersim.collectives.dbt import dbt_allreduce
from clustersim.collectives.direct import (
    asa_allreduce,
    check_direct_size,
    p2p,
    pairwise_alltoall,
    pairwise_reduce_scatter,
    ps_pull,
    ps_push,
)
from clustersim.collectives.hierarchical import hierarchical_allreduce
from clustersim.collectives.library_algos import LIBRARY_ALGOS
from clustersim.collectives.opfields import busbw_factor as _busbw
from clustersim.collectives.opfields import convert_bytes as _convert_bytes
from clustersim.collectives.pipeline import chain_bcast, default_chunks
from clustersim.collectives.plan import Plan, pow2_floor
from clustersim.collectives.recursive import (
    doubling_allgather,
    halving_reduce_scatter,
    rabenseifner_allreduce,
    recursive_doubling_allreduce,
)
from clustersim.collectives.request import Algo as _Algo
from clustersim.collectives.request import Request
from clustersim.collectives.request import fill as _fill
from clustersim.collectives.ring import ring_allgather, ring_allreduce, ring_reduce_scatter
from clustersim.collectives.schedule import Schedule
from clustersim.collectives.selection import (
    SELECTOR_ABOUT,
    SELECTOR_ALLREDUCE,
    is_selector,
    select_schedule,
    selector_ops,
)
from clustersim.collectives.trees import (
    binomial_allreduce,
    binomial_bcast_rounds,
    binomial_gather,
    binomial_reduce_rounds,
    binomial_scatter,
    linear_gather,
    linear_scatter,
    rotate,
    scatter_allgather_bcast,
)
from clustersim.collectives.usertree import copper_tree, parse_tree, tree_allreduce
from clustersim.errors import InputError, unknown_name

__all__ = ["OPS", "Request", "build_schedule", "list_algorithms", "describe_algorithm"]

#: default cap on pipeline chunks (see :mod:`~clustersim.collectives.pipeline`)
TREE_CHUNK_CAP = 1024
CHAIN_CHUNK_CAP = 64

# -- allreduce -----------------------------------------------------------------------------
def _dbt(req: Request) -> Plan:
    wire_half = req.nbytes * (0.5 if req.fp16 else 1.0) / 2
    c = req.chunks or default_chunks(wire_half, TREE_CHUNK_CAP)
    plan = req.plan(2 * c)
    plan.meta["chunks"] = c
    dbt_allreduce(plan, c)
    return plan


def inter_builder(req: Request) -> Callable[[int], Plan]:
    """Builds ``req.inter`` (an allreduce) on ``L`` ranks: the stage among hosts of the
    hierarchical allreduces."""
    inter = _ALGOS["allreduce"][req.inter]

    def inner(leaders: int) -> Plan:
        sub = Request("allreduce", req.inter, leaders, req.nbytes, None, 0, (0,), req.tree,
                      req.fp16, req.chunks, "ring")
        return inter.build(sub)
    return inner


def _hierarchical(req: Request) -> Plan:
    if req.hosts is None:
        raise InputError("the hierarchical allreduce needs hosts (the machine of every rank)",
                         path=("hosts",))
    plan = hierarchical_allreduce(req.ranks, req.nbytes, req.fp16, req.hosts,
                                  inter_builder(req))
    plan.meta["inter"] = req.inter
    return plan


def _tree(req: Request, default: Callable[[int], list] | None) -> Plan:
    if req.tree is not None:
        stages = parse_tree(req.tree, req.ranks)
    elif default is not None:
        stages = default(req.ranks)
    else:
        raise InputError("algorithm 'user_tree' needs tree: a list of stages of [src, dst] "
                         "pairs", path=("tree",))
    plan = req.plan(1)
    tree_allreduce(plan, stages)
    plan.meta["tree"] = [list(s) for s in stages]
    return plan


def _asa(req: Request) -> Plan:
    check_direct_size(req.ranks, "asa (alltoall-sum-allgather)")
    return _fill(req, req.ranks, asa_allreduce)


def _chain(req: Request) -> Plan:
    c = req.chunks or default_chunks(req.nbytes * (0.5 if req.fp16 else 1.0), CHAIN_CHUNK_CAP)
    plan = req.plan(c)
    plan.meta["chunks"] = c
    chain_bcast(plan, req.root, c)
    return plan


def _binomial_bcast(req: Request) -> Plan:
    plan = req.plan(1)
    plan.add_rounds(binomial_bcast_rounds(plan, rotate(req.ranks, req.root)), "binomial bcast")
    return plan


def _binomial_reduce(req: Request) -> Plan:
    plan = req.plan(1)
    plan.add_rounds(binomial_reduce_rounds(plan, rotate(req.ranks, req.root)),
                    "binomial reduce")
    return plan


def _pairwise_rs(req: Request) -> Plan:
    check_direct_size(req.ranks, "pairwise reduce_scatter")
    return _fill(req, req.ranks, pairwise_reduce_scatter)


def _pairwise_a2a(req: Request) -> Plan:
    check_direct_size(req.ranks, "pairwise alltoall")
    return _fill(req, req.ranks, pairwise_alltoall, inplace=False)


def _p2p(req: Request) -> Plan:
    if req.ranks < 2:
        raise InputError("p2p needs at least 2 ranks", path=("ranks",))
    return _fill(req, 1, p2p)


def _ps(fn: Callable[[Plan, Sequence[int]], None]) -> Callable[[Request], Plan]:
    def build(req: Request) -> Plan:
        if len(req.servers) >= req.ranks:
            raise InputError(f"{len(req.servers)} server(s) leave no worker among "
                             f"{req.ranks} ranks", path=("root",))
        plan = req.plan(len(req.servers))
        fn(plan, req.servers)
        return plan
    return build


_RING = "ring: reduce-scatter + allgather around a ring, 2(p-1) steps of n/p"
_ALGOS: dict[str, dict[str, _Algo]] = {
    "allreduce": {
        "ring": _Algo(lambda r: _fill(r, r.ranks, ring_allreduce), _RING),
        "recursive_doubling": _Algo(
            lambda r: _fill(r, 1, recursive_doubling_allreduce),
            "recursive doubling: log2 p exchanges of the whole buffer (MPICH short messages)"),
        "rabenseifner": _Algo(
            lambda r: _fill(r, pow2_floor(r.ranks), rabenseifner_allreduce),
            "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather"),
        "binomial_tree": _Algo(
            lambda r: _fill(r, 1, lambda p: binomial_allreduce(p, r.root)),
            "binomial reduce to root, then binomial broadcast", uses_root=True),
        "double_binary_tree": _Algo(
            _dbt, "NCCL's double binary tree: two complementary trees, half the data each, "
                  "pipelined in chunks"),
        "hierarchical": _Algo(
            _hierarchical, "reduce to a leader per host, allreduce among leaders (inter), "
                           "broadcast per host"),
        "asa": _Algo(_asa, "Theano-MPI alltoall-sum-allgather: direct reduce-scatter, direct "
                           "allgather"),
        "asa16": _Algo(_asa, "asa with fp16 transfers (Theano-MPI asa16)", fp16=True),
        "copper": _Algo(lambda r: _tree(r, copper_tree),
                        "Theano-MPI copper: hand-fitted binary tree for a two-socket node"),
        "user_tree": _Algo(lambda r: _tree(r, None),
                           "a user-given tree: stages of (src, dst) pairs, reduce/copy "
                           "inferred"),
    },
    "broadcast": {
        "binomial": _Algo(_binomial_bcast, "binomial tree, ceil(log2 p) steps of n",
                          uses_root=True),
        "scatter_allgather": _Algo(
            lambda r: _fill(r, r.ranks, lambda p: scatter_allgather_bcast(p, r.root)),
            "van de Geijn: binomial scatter then ring allgather (MPICH long messages)",
            uses_root=True),
        "pipelined_chain": _Algo(_chain, "pipelined chain root -> root+1 -> ..., n in chunks",
                                 uses_root=True),
    },
    "reduce": {
        "binomial": _Algo(_binomial_reduce, "binomial tree, ceil(log2 p) steps of n",
                          uses_root=True),
    },
    "reduce_scatter": {
        "ring": _Algo(lambda r: _fill(r, r.ranks, ring_reduce_scatter),
                      "ring, p-1 steps of n/p"),
        "recursive_halving": _Algo(lambda r: _fill(r, r.ranks, halving_reduce_scatter),
                                   "recursive halving, log2 p steps (fold for other p)"),
        "pairwise": _Algo(_pairwise_rs, "pairwise exchange, p-1 rounds of n/p"),
    },
    "allgather": {
        "ring": _Algo(lambda r: _fill(r, r.ranks, ring_allgather), "ring, p-1 steps of n/p"),
        "recursive_doubling": _Algo(lambda r: _fill(r, r.ranks, doubling_allgather),
                                    "recursive doubling, log2 p steps (fold for other p)"),
    },
    "alltoall": {
        "pairwise": _Algo(_pairwise_a2a, "pairwise exchange, p-1 rounds of n/p"),
    },
    "p2p": {
        "direct": _Algo(_p2p, "rank 0 sends n bytes to rank 1"),
    },
    "gather": {
        "binomial": _Algo(lambda r: _fill(r, r.ranks, lambda p: binomial_gather(p, r.root)),
                          "binomial tree, subtrees forward their blocks", uses_root=True),
        "linear": _Algo(lambda r: _fill(r, r.ranks, lambda p: linear_gather(p, r.root)),
                        "every rank sends its block to the root at once", uses_root=True),
    },
    "scatter": {
        "binomial": _Algo(lambda r: _fill(r, r.ranks, lambda p: binomial_scatter(p, r.root)),
                          "binomial tree, halves handed down", uses_root=True),
        "linear": _Algo(lambda r: _fill(r, r.ranks, lambda p: linear_scatter(p, r.root)),
                        "the root sends every block at once", uses_root=True),
    },
    "ps_push": {
        "direct": _Algo(_ps(ps_push), "every worker sends its buffer (sharded) to the "
                                      "server(s), which sum it", uses_root=True),
    },
    "ps_pull": {
        "direct": _Algo(_ps(ps_pull), "every server sends its shard to every worker",
                        uses_root=True),
    },
}

for _op, _extra in LIBRARY_ALGOS.items():
    _ALGOS[_op].update(_extra)

OPS: tuple[str, ...] = tuple(_ALGOS)
#: allreduce algorithms that build on one host per rank and an inter-host allreduce
_HIER = ("hierarchical", "horovod_hierarchical")


def _as_int(value: object, field: str, minimum: int) -> int:
    """An integer (NumPy integers welcome, booleans not) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InputError(f"{field} must be an integer >= {minimum}, got {value!r}",
                         path=(field,))
    return int(value)


def _servers(root: int | Sequence[int], ranks: int) -> tuple[int, ...]:
    single = isinstance(root, numbers.Integral) and not isinstance(root, bool)
    raw = [root] if single else root
    if not isinstance(raw, (list, tuple)) or not raw:
        raise InputError(f"root must be a rank or a list of server ranks, got {root!r}",
                         path=("root",))
    out: list[int] = []
    for i, r in enumerate(raw):
        if isinstance(r, bool) or not isinstance(r, numbers.Integral) or not 0 <= r < ranks:
            raise InputError(f"server rank {r!r} is not in 0..{ranks - 1}", path=("root", i))
        if r in out:
            raise InputError(f"server rank {r} is listed twice", path=("root", i))
        out.append(int(r))
    return tuple(out)


def _lookup(op: str, algorithm: str) -> _Algo:
    algs = _ALGOS.get(op)
    if algs is None:
        raise unknown_name("collective op", op, _ALGOS, path=("op",))
    algo = algs.get(algorithm)
    if algo is None:  # the selectors are algorithm names too (list_algorithms lists them)
        raise unknown_name(f"{op} algorithm", algorithm, [*algs, *selector_ops(op)],
                           path=("algorithm",))
    return algo


def build_schedule(op: str, algorithm: str, ranks: int, nbytes: float, *,
                   hosts: Sequence[int] | None = None, root: int | Sequence[int] = 0,
                   tree: Sequence | None = None, fp16: bool = False,
                   chunks: int | None = None, inter: str | None = None,
                   library: str | None = None, machine: Any = None) -> Schedule:
    """The schedule of collective ``op`` by ``algorithm`` on ``ranks`` ranks, ``nbytes`` each.

    ``nbytes`` is nccl-tests' *size*: the per-rank buffer for allreduce/broadcast/reduce/p2p/
    ps, the whole gathered/scattered buffer for allgather/reduce_scatter/gather/scatter, the
    per-rank send buffer for alltoall.  ``hosts[rank]`` is the machine of each rank (used by
    ``hierarchical``; ignored otherwise).  ``root`` is the root of rooted ops and of
    ``binomial_tree``; for ``ps_push``/``ps_pull`` it may be a list of server ranks, the buffer
    sharded evenly across them.  ``tree`` is a user tree (stages of ``(src, dst)`` pairs) for
    ``user_tree``/``copper``.  ``chunks`` sets the pipeline depth of ``double_binary_tree``
    (per tree) and ``pipelined_chain``.  ``inter`` is the allreduce among host leaders of
    ``hierarchical`` (default ``ring``).

    ``algorithm`` may also name a library - ``mpich``, ``openmpi`` (``openmpi-4.1``,
    ``openmpi-4.0``), ``nccl`` - or ``auto`` (``library``, the platform's declared library,
    else ``mpich``): the library's own decision picks the algorithm (:mod:`.selection`) and
    the schedule's ``algorithm`` reads ``library→choice``.  ``machine`` is what NCCL's
    topology search finds on the ranks' devices (:func:`.nccl_machine.machine_of`), read by
    the ``nccl`` selector only (None: its reference node).
    """
    if is_selector(algorithm):
        return select_schedule(op, algorithm, ranks, nbytes, hosts=hosts, root=root,
                               fp16=fp16, library=library, machine=machine)
    algo = _lookup(op, algorithm)
    ranks = _as_int(ranks, "ranks", 1)
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Real) or \
            not math.isfinite(nbytes) or nbytes < 0:
        raise InputError(f"nbytes must be a finite number >= 0, got {nbytes!r}",
                         path=("nbytes",))
    if chunks is not None:
        chunks = _as_int(chunks, "chunks", 1)
    servers: tuple[int, ...] = (0,)
    root_rank = 0
    if op in ("ps_push", "ps_pull"):
        servers = _servers(root, ranks)
        root_rank = servers[0]
    elif algo.uses_root:
        root_rank = _as_int(root, "root", 0)
        if root_rank >= ranks:
            raise InputError(f"root {root_rank} is not a rank of {ranks}", path=("root",))
    inter_name = inter if inter is not None else "ring"
    if algorithm in _HIER and (inter_name in _HIER or inter_name not in _ALGOS["allreduce"]):
        allowed = [a for a in _ALGOS["allreduce"] if a not in _HIER]
        raise unknown_name("inter-host allreduce", inter_name, allowed, path=("inter",))
    fp16 = bool(fp16) or algo.fp16 or (
        algorithm in _HIER and _ALGOS["allreduce"][inter_name].fp16)
    host_ids = None
    if hosts is not None:
        host_ids = tuple(hosts)
        if algorithm in _HIER and len(host_ids) != ranks:
            raise InputError(f"hosts lists {len(host_ids)} ranks, expected {ranks}",
                             path=("hosts",))
    req = Request(op, algorithm, ranks, float(nbytes), host_ids, root_rank, servers,
                  list(tree) if tree is not None else None, fp16, chunks, inter_name)
    with paused():
        plan = algo.build(req)
    plan.meta.setdefault("root", root_rank)
    if op in ("ps_push", "ps_pull"):
        plan.meta["servers"] = servers
    convert = _convert_bytes(op, float(nbytes), ranks, len(servers)) if fp16 else 0.0
    return plan.to_schedule(op, algorithm, convert, _busbw(op, ranks))


def list_algorithms(op: str | None = None) -> dict[str, list[str]]:
    """``{op: [algorithm, ...]}`` for every op, or only for ``op``."""
    if op is not None:
        if op not in _ALGOS:
            raise unknown_name("collective op", op, _ALGOS, path=("op",))
        return {op: [*_ALGOS[op], *selector_ops(op)]}
    return {o: [*a, *selector_ops(o)] for o, a in _ALGOS.items()}


def describe_algorithm(op: str, algorithm: str) -> str:
    """One line on what ``algorithm`` does for ``op`` (for --help and listings)."""
    if is_selector(algorithm) and algorithm in selector_ops(op):
        rule = SELECTOR_ALLREDUCE.get(algorithm) if op == "allreduce" else None
        return SELECTOR_ABOUT[algorithm] + (f"; allreduce: {rule}" if rule else "")
    return _lookup(op, algorithm).about
