"""Analytic costing of a collective schedule, contention included.

Why it exists: simulating every flow of a 4,253-rank ring is millions of events; but a ring's
2(p-1) steps are one pattern.  Here each *distinct* step is costed once - routes resolved on the
platform, rates from max-min sharing of all its transfers at once (so an oversubscribed uplink or
an incast is counted) - and multiplied by its repeat count.

Step time = step overhead (software cost of a schedule step, ``params.step_overhead``)
          + max over transfers of (overhead + path latency + bytes / fair rate)  [local copies: 0]
          + max over ranks of (bytes reduced / device reduction bandwidth);
for a schedule with ``fused_reduce`` (NCCL's reduce-copy) the reduction overlaps the rest:
step time = max(that communication time, that reduction time).
With a piecewise protocol table (``params.protocols``) each transfer's overhead and charged
bytes come from the segment of its size, as in the flow model, and a schedule's transfers
pay the collective efficiency (the segment's, else ``params.collective_efficiency``).

Where it differs from the flow model (:mod:`clustersim.network.flowsim`): rates here are the
ones at the *start* of a step and every transfer pays its latency before sharing.  When, within
every group of transfers that share links, all carry the same bytes and have the same latency,
this is exact - the slowest flows hold a link that only equally slow flows use until they all
end (proof in :mod:`clustersim.network.fidelity`), so uniform rings, recursive doubling/halving
and pairwise exchanges cost the same on crossbars, rings, fat-trees, oversubscribed
leaf-spines and dragonflies alike.  Otherwise the flow model lets early or small flows drain
first and hands their bandwidth on, and this model is pessimistic: by the latency spread of an
incast at small sizes (up to +23 % on a fat-tree, +57 % on a multi-hop ring topology at
64 KiB) and by a few percent at most for bandwidth-bound sizes (worst measured: +5.3 % for the
pipelined double binary tree on a 64-host ring topology).  Neither model sees traffic from
*other* collectives; only the flow model run inside the training simulator does.  Measured
tables: docs/fidelity.md (``bench/bench_network.py --fidelity``).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from clustersim.collectives.plan import BULK
from clustersim.collectives.schedule import Schedule, Step
from clustersim.network.maxmin import flat_incidence, progressive_fill
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform

__all__ = ["CollectiveCost", "cost_schedule", "cost_step", "convert_time"]


@dataclass
class CollectiveCost:
    """Time of one collective and where it went (seconds)."""

    time: float
    comm: float
    reduce: float
    convert: float
    step_times: list[float] = field(default_factory=list)
    fidelity: str = "analytic"


def convert_time(platform: Platform, device: int, nbytes: float) -> float:
    """fp32<->fp16 cast of ``nbytes`` of fp32 data: read 4 bytes, write 2 per element."""
    spec = platform.spec(device)
    return nbytes * 1.5 / (spec.mem_bw * spec.mem_efficiency)


#: per platform: (transfer endpoints, capacity factor, protocol table in use) -> what a step's
#: routes decide - rates, latencies, remote mask, bottleneck link classes.  None of it depends
#: on the bytes moved (rates are max-min shares at the step's start), so the steps of one
#: pattern - a ring's reduce-scatter and all-gather, every bucket of a job - share one solve.
_ROUTED: weakref.WeakKeyDictionary[Platform, dict[tuple, _Routed]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Routed:
    rates: np.ndarray
    lat: np.ndarray
    remote: np.ndarray
    classes: tuple[str | None, ...] | None
    empty: bool
    #: the distinct classes and each transfer's index into them (None when plain)
    uclasses: tuple[str | None, ...] = ()
    codes: np.ndarray | None = None


class _Cols:
    """One step's transfers as columns (sources, destinations, bytes, reducing), extracted
    once: the steps of a 100,000-rank ring are costed over and over (both halves of every
    bucket's all-reduce, in every run) and a pass over 100,000 transfers costs ~20 ms."""

    __slots__ = ("transfers", "src", "dst", "sizes", "red_dst", "red_bytes")

    def __init__(self, transfers: tuple) -> None:
        n = len(transfers)
        self.transfers = transfers  # held: the memo is keyed by its id
        bulk = BULK.pop(id(transfers), None)  # memoised below (_COLS): not needed again
        if bulk is not None and bulk[0] is transfers and len(bulk[1]) == len(bulk[2]) == n:
            # built by make_transfers from these sources and destinations, one size, one flag
            _, srcs, dsts, nbytes, reduce = bulk
            self.src = np.fromiter(srcs, dtype=np.int64, count=n)
            self.dst = np.fromiter(dsts, dtype=np.int64, count=n)
            self.sizes = np.full(n, nbytes)
            red = np.full(n, reduce)
        else:
            self.src = np.fromiter(map(itemgetter(0), transfers), dtype=np.int64, count=n)
            self.dst = np.fromiter(map(itemgetter(1), transfers), dtype=np.int64, count=n)
            self.sizes = np.fromiter(map(itemgetter(2), transfers), dtype=float, count=n)
            red = np.fromiter(map(itemgetter(3), transfers), dtype=bool, count=n)
        self.red_dst = self.dst[red]
        self.red_bytes = self.sizes[red]


_COLS: dict[int, _Cols] = {}


def _cols(step: Step) -> _Cols:
    c = _COLS.get(id(step.transfers))
    if c is None or c.transfers is not step.transfers:
        if len(_COLS) > 256:
            _COLS.clear()
        c = _COLS[id(step.transfers)] = _Cols(step.transfers)
    return c


def _routed(step: Step, platform: Platform, placement: Sequence[int],
            params: NetworkParams, pl: np.ndarray | None = None) -> _Routed:
    cols = _cols(step)
    if pl is None:
        pl = np.asarray(placement, dtype=np.int64)
    ends = np.concatenate((pl[cols.src], pl[cols.dst]))
    kinds = params.platform_keys(platform)
    # the endpoints as bytes: the same key as the tuple of (src, dst) device pairs, hashed
    # and compared in C
    key = (ends.tobytes(), params.efficiency, kinds is not None, params.plain,
           params.key_signature)
    cache = _ROUTED.setdefault(platform, {})
    hit = cache.get(key)
    if hit is not None:
        return hit
    n = len(cols.src)
    routes = platform.rank_routes(ends[:n], ends[n:])
    links, owner = flat_incidence(routes)
    if not links.size:
        got = _Routed(np.empty(0), np.empty(0), np.empty(0, dtype=bool), None, True)
    else:
        used, local = np.unique(links, return_inverse=True)
        cap = platform.capacity[used] * params.efficiency
        rates = progressive_fill(local, owner, cap, n)
        lat = np.bincount(owner, weights=platform.latency[links], minlength=n)
        classes = (_bottlenecks(links, owner, n, platform, kinds, params.weights)
                   if not params.plain else None)
        uclasses: tuple[str | None, ...] = ()
        codes = None
        if classes is not None:
            index: dict[str | None, int] = {}
            codes = np.fromiter((index.setdefault(c, len(index)) for c in classes),
                                dtype=np.int64, count=n)
            uclasses = tuple(index)
        got = _Routed(rates, lat, np.isfinite(rates), classes, False, uclasses, codes)
    if len(cache) > 4096:  # a long-lived process costing many placements: start over
        cache.clear()
    cache[key] = got
    return got


def _bottlenecks(links: np.ndarray, owner: np.ndarray, n: int, platform: Platform,
                 kinds: Sequence[str] | None, weights: dict[str, float] | None
                 ) -> tuple[str | None, ...]:
    """:func:`~clustersim.network.params.bottleneck_class` of every route at once, from the
    flat incidence (routes in order, links in route order): the first link of each route
    with the lowest (weighted) capacity; None for an empty route."""
    if kinds is None:
        return (None,) * n
    val = platform.capacity[links]
    if weights:
        mkey = ("link_weights", id(kinds), tuple(sorted(weights.items())))
        got = platform.memo.get(mkey)
        if got is None or got[0] is not kinds:
            per_key = {k: weights.get(k, 1.0) for k in set(kinds)}
            got = platform.memo[mkey] = (kinds, np.fromiter(
                map(per_key.__getitem__, kinds), dtype=float, count=len(kinds)))
        val = val * got[1][links]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    low = np.minimum.reduceat(val, starts)
    lens = np.diff(np.r_[starts, len(owner)])
    first = np.flatnonzero(val == np.repeat(low, lens))
    routes_with, at = np.unique(owner[first], return_index=True)
    out: list[str | None] = [None] * n
    for f, lk in zip(routes_with.tolist(), links[first[at]].tolist()):
        out[f] = kinds[lk]
    return tuple(out)


def _message_costs(sizes: np.ndarray, r: _Routed, params: NetworkParams
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per transfer (overhead, charged-bytes factor) of ``params.message_cost``, asked once
    per distinct (size, bottleneck class): a 100,000-rank ring step is 100,000 transfers of
    one size on two or three classes."""
    assert r.classes is not None and r.codes is not None
    us, inv = np.unique(sizes, return_inverse=True)
    combo = inv.reshape(-1) * len(r.uclasses) + r.codes
    keys, back = np.unique(combo, return_inverse=True)
    ovh = np.empty(len(keys))
    fac = np.empty(len(keys))
    for j, k in enumerate(keys.tolist()):
        si, ci = divmod(k, len(r.uclasses))
        ovh[j], fac[j] = params.message_cost(float(us[si]), r.uclasses[ci], True)
    back = back.reshape(-1)
    return ovh[back], fac[back]


def cost_step(
    step: Step,
    platform: Platform,
    placement: Sequence[int],
    params: NetworkParams = NetworkParams(),
) -> tuple[float, float]:
    """(communication time, reduction time) of one occurrence of ``step``.

    A transfer between ranks on the same device (empty route) is a local copy and costs
    nothing, as in the flow model.
    """
    return _cost_step(step, platform, placement, np.asarray(placement, dtype=np.int64), params)


def _cost_step(step: Step, platform: Platform, placement: Sequence[int], pl: np.ndarray,
               params: NetworkParams) -> tuple[float, float]:
    """:func:`cost_step` with the placement also as an array (``pl``), made once per
    schedule; every per-transfer quantity is a numpy column (:class:`_Cols`)."""
    dt, remote, red_ranks, red_times = _step_arrays(step, platform, placement, pl, params)
    comm = float(dt.max()) + params.step_overhead if remote.any() else 0.0
    red = float(red_times.max()) if red_times.size else 0.0
    return comm, red


def _step_arrays(step: Step, platform: Platform, placement: Sequence[int], pl: np.ndarray,
                 params: NetworkParams
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per transfer its time in the step's sharing (0 for a local copy) and whether it is
    remote; the ranks that reduce, with their reduction times."""
    empty = np.empty(0)
    if not step.transfers:
        return empty, np.empty(0, dtype=bool), np.empty(0, dtype=np.int64), empty
    cols = _cols(step)
    r = _routed(step, platform, placement, params, pl)
    dt = np.zeros(len(cols.sizes))
    remote_mask = np.zeros(len(cols.sizes), dtype=bool)
    if not r.empty:
        remote = r.remote
        sizes = cols.sizes
        if not params.plain:
            assert r.classes is not None
            ovh, factor = _message_costs(sizes, r, params)
            sizes = sizes * factor
            dt[remote] = ovh[remote] + r.lat[remote] + sizes[remote] / r.rates[remote]
        else:
            dt[remote] = params.overhead + r.lat[remote] + sizes[remote] / r.rates[remote]
        remote_mask = remote
    ranks = np.empty(0, dtype=np.int64)
    red_times = empty
    if cols.red_dst.size:
        # bytes reduced per rank, summed in transfer order as Step.reduce_bytes does
        per_rank = np.bincount(cols.red_dst, weights=cols.red_bytes)
        ranks = np.flatnonzero(np.bincount(cols.red_dst))
        red_times = per_rank[ranks] / _reduce_bw(platform)[pl[ranks]]
    return dt, remote_mask, ranks, red_times


def _clocked_step(clock: np.ndarray, step: Step, platform: Platform,
                  placement: Sequence[int], pl: np.ndarray, params: NetworkParams,
                  fused: bool) -> tuple[float, float]:
    """Advance each rank's ``clock`` through a once-only step, dependency-driven: a transfer
    starts when both its ranks are done with their earlier steps, a rank is done when its
    transfers are and it has reduced what it received.  Returns the step's span (first
    start to last end) and the longest reduction a rank waited for (the flow model's
    :func:`~clustersim.network.flowsim.schedule_process` does the same with events)."""
    dt, remote, ranks, red_times = _step_arrays(step, platform, placement, pl, params)
    cols = _cols(step)
    src, dst = cols.src, cols.dst
    start = np.maximum(clock[src], clock[dst])
    end = start + dt
    if params.step_overhead:
        end = end + np.where(remote, params.step_overhead, 0.0)
    first = float(start.min())
    involved = np.unique(np.concatenate((src, dst)))
    began = clock.copy()
    began[involved] = np.inf
    np.minimum.at(began, src, start)
    np.minimum.at(began, dst, start)
    np.maximum.at(clock, src, end)
    np.maximum.at(clock, dst, end)
    red = 0.0
    if ranks.size:
        exposed = (np.maximum(0.0, red_times - (clock[ranks] - began[ranks])) if fused
                   else red_times)
        clock[ranks] += exposed
        red = float(exposed.max())
    return max(0.0, float(clock[involved].max()) - first), red


def _reduce_bw(platform: Platform) -> np.ndarray:
    """Reduction bandwidth of every device (by device index), memoised on the platform."""
    got = platform.memo.get("reduce_bw")
    if got is None:
        by_spec = {id(s): s.reduce_bw for s in platform.rank_specs}
        got = platform.memo["reduce_bw"] = np.array(
            [by_spec[id(s)] for s in platform.rank_specs], dtype=float)
    return got


def cost_schedule(
    schedule: Schedule,
    platform: Platform,
    placement: Sequence[int] | None = None,
    params: NetworkParams = NetworkParams(),
) -> CollectiveCost:
    """Cost a whole schedule; ``placement[rank]`` is the device index of each rank."""
    if placement is None:
        placement = range(schedule.ranks)
    placement = list(placement)
    if len(placement) < schedule.ranks:
        raise ValueError(f"placement has {len(placement)} devices for {schedule.ranks} ranks")
    pl = np.asarray(placement, dtype=np.int64)
    comm = red = 0.0
    step_times = []
    fused = schedule.fused_reduce
    # ``execution: dependencies``: each rank's time, for steps that occur once (as MPI and
    # NCCL run them: a tree level's subtree does not wait for another subtree's slow child);
    # repeated steps, and every step under ``rounds``, run as rounds of all their transfers
    clock: np.ndarray | None = None
    dependencies = params.execution == "dependencies"
    for step in schedule.steps:
        if dependencies and step.repeat == 1 and step.transfers:
            if clock is None:
                clock = np.full(schedule.ranks, comm + red)
            span, r = _clocked_step(clock, step, platform, placement, pl, params, fused)
            red += r
            step_times.append(span)
            continue
        c, r = _cost_step(step, platform, placement, pl, params)
        if fused:
            # NCCL reduces while it copies: only the part of the reduction longer than the
            # step's transfers shows (``reduce`` is that exposed part, so time = comm + reduce)
            r = max(0.0, r - c)
        if clock is not None:  # a round after dependency-driven steps: when all are done
            comm = float(clock.max()) - red
            clock = None
        comm += c * step.repeat
        red += r * step.repeat
        step_times.append(c + r)
    if clock is not None:
        comm = max(0.0, float(clock.max()) - red)
    conv = 0.0
    if schedule.convert_bytes:
        # the same for every rank on one kind of device: once per kind (largest wins)
        specs = platform.rank_specs
        kinds = {id(specs[d]): d for d in placement[:schedule.ranks]}
        conv = max(convert_time(platform, d, schedule.convert_bytes) for d in kinds.values())
    return CollectiveCost(comm + red + conv, comm, red, conv, step_times)
