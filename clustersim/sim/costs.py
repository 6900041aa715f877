"""How long each ``Compute`` takes: the workload's compute profile per device kind, plus jitter.

Why a separate cost model: the engine interprets operations, the workload layer knows the
roofline; this adapter maps an operation (phase, layer slice, bytes) to seconds on the actor's
device, caches the deterministic part, and multiplies by a seeded jitter factor so that
stragglers emerge in synchronous algorithms the way they do on shared machines.

Jitter: lognormal with mean 1 and coefficient of variation ``workload.jitter`` (sigma^2 =
ln(1 + cv^2)), drawn per compute operation from a generator seeded by (seed, actor rank) -
so a run is a pure function of the scenario and its seed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clustersim.algorithms.base import ActorSpec
from clustersim.algorithms.ops import Collective, Compute
from clustersim.sim.sharing import device_factors
from clustersim.sim.streams import RankStreams
from clustersim.workload.compute import ComputeProfile

__all__ = ["CostModel"]


class _Stream:
    """One rank's jitter factors drawn so far, in order, and the generator that continues
    them (see :meth:`CostModel._draws`)."""

    __slots__ = ("gen", "draws")

    def __init__(self, gen: np.random.Generator) -> None:
        self.gen = gen
        self.draws: list[float] = []


#: (seed, sigma) -> rank -> its jitter stream, shared by the cost models of one process
_STREAMS: dict[tuple[int, float], dict[int, _Stream]] = {}


class CostModel:
    """Seconds each ``Compute`` of one point takes (module docs): ``batch`` samples per worker,
    jitter streams seeded by ``seed``; built once per point (``sim.sweep``), asked by the engine."""

    def __init__(self, scn: Any, batch: int, seed: int) -> None:
        wl = scn.workload
        self.scn = scn
        self.model = wl.model
        self.batch = batch
        self.optimizer = wl.optimizer
        self.bucket_bytes = wl.bucket_bytes
        self.fusion = getattr(wl, "fusion", None)
        self.pipeline = wl.pipeline
        self.overrides = wl.compute
        self.platform = scn.platform
        self._profiles: dict[str, ComputeProfile] = {}
        self._fwd_prefix: dict[str, np.ndarray] = {}
        self._bwd_prefix: dict[str, np.ndarray] = {}
        self._cache: dict[tuple, float] = {}
        self.num_layers = len(self.model.layers)
        self.grad_bytes = float(self.model.grad_bytes)
        cv = wl.jitter
        self._sigma = math.sqrt(math.log1p(cv * cv)) if cv > 0 else 0.0
        self._seed = seed
        self._rngs: dict[int, np.random.Generator] = {}
        self._streams: RankStreams | bool | None = None
        self._kinds: dict[int, str] = {}
        #: device -> compute-time factor of a time-shared device (:mod:`.sharing`)
        self._shares: dict[int, float] = {}
        self._jbuf: dict[int, list[float]] = {}
        self._jdrawn: dict[int, int] = {}
        self._tables: dict[str, dict[int, tuple[Compute, float, bool]]] = {}
        self._by_value: dict[tuple[str, Compute], tuple[float, bool]] = {}

    # -- profiles ---------------------------------------------------------------------------
    def profile(self, device: int) -> ComputeProfile:
        spec = self.platform.spec(device)
        prof = self._profiles.get(spec.name)
        if prof is None:
            prof = ComputeProfile.build(self.model, spec, self.batch, overrides=self.overrides,
                                        optimizer=self.optimizer, pipeline=self.pipeline)
            self._profiles[spec.name] = prof
            self._fwd_prefix[spec.name] = np.concatenate(
                [[0.0], np.cumsum([k.time for k in prof.forward])])
            # backward steps are in reverse layer order; index them by forward position
            bwd = [0.0] * self.num_layers
            for j, s in enumerate(prof.backward):
                bwd[self.num_layers - 1 - j] = s.time
            self._bwd_prefix[spec.name] = np.concatenate([[0.0], np.cumsum(bwd)])
        return prof

    def buckets(self) -> tuple[tuple[int, int, float], ...]:
        """Gradient buckets as forward-order layer slices, in backward (ready) order.

        Bucket k covers the backward steps after bucket k-1 up to its last gradient; layers
        without parameters at the input end join the last bucket.  No bucketing = one bucket.
        """
        L = self.num_layers
        if self.fusion is not None:  # a framework's grouping (workload.fusion)
            from clustersim.workload.fusion import fusion_buckets

            bks = fusion_buckets(self.profile(0), self.fusion)
        else:
            bks = None if self.bucket_bytes is None else self.profile(0).buckets(
                self.bucket_bytes)
        if bks is None:
            return ((0, L, self.grad_bytes),)
        prof = self.profile(0)
        pos = {s.name: j for j, s in enumerate(prof.backward)}
        out = []
        prev = -1
        for k, b in enumerate(bks):
            last = max(pos[n] for n in b.layers)
            if k == len(bks) - 1:
                last = L - 1
            out.append((L - 1 - last, L - 1 - prev, float(b.nbytes)))
            prev = last
        return tuple(out)

    # -- per-operation costs ------------------------------------------------------------------
    def _rng(self, rank: int) -> np.random.Generator:
        """``np.random.default_rng([seed, 7, rank])``, made in bulk (:mod:`.streams`)."""
        g = self._rngs.get(rank)
        if g is None:
            if self._streams is None:
                seed = self._seed
                ok = isinstance(seed, (int, np.integer)) and seed >= 0
                self._streams = RankStreams((seed, 7)) if ok else False
            if self._streams:
                g = self._streams.generator(rank)
            else:  # a seed numpy's bulk path does not take: numpy decides (and complains)
                g = np.random.default_rng([self._seed, 7, rank])
            self._rngs[rank] = g
        return g

    def jitter_buffer(self, rank: int) -> list[float]:
        """The jitter factors of ``rank`` drawn but not used yet, the next one *last* (take it
        with ``pop()``); :meth:`draw_jitter` refills this same list in place, so a caller may
        keep a reference to it (the engine's hot loop does)."""
        buf = self._jbuf.get(rank)
        if buf is None:
            buf = self._jbuf[rank] = []
        return buf

    def draw_jitter(self, rank: int) -> float:
        """The next jitter factor of ``rank``, from its own generator.

        Drawn in growing batches (8, 16, ... 256 at a time): one numpy call per batch instead
        of one per operation, and a run of a few iterations (4,253 workers x 6 draws) does not
        pay for 256 draws per rank.  numpy draws a batch element by element from the same
        bit stream, so the sequence does not depend on the batch sizes: it is the same pure
        function of seed and rank.
        """
        buf = self.jitter_buffer(rank)
        if not buf:
            drawn = self._jdrawn.get(rank, 0)
            n = min(256, max(8, drawn))
            self._jdrawn[rank] = drawn + n
            batch = self._draws(rank, drawn, n)
            batch.reverse()
            buf.extend(batch)
        return buf.pop()

    def _draws(self, rank: int, start: int, n: int) -> list[float]:
        """Factors ``start .. start + n - 1`` of ``rank``'s stream.

        The stream is a pure function of (seed, rank, sigma), and every algorithm of a sweep
        draws the same one: it is drawn once per process and shared (:data:`_STREAMS`), so
        the second and later points of a 4,000-worker sweep make no generators (20 us per
        rank) and no draws.  Seeds numpy's bulk path does not take get a generator of
        their own, as before."""
        s = self._sigma
        seed = self._seed
        if not (isinstance(seed, (int, np.integer)) and seed >= 0):
            return self._rng(rank).lognormal(-0.5 * s * s, s, n).tolist()
        key = (int(seed), s)
        streams = _STREAMS.get(key)
        if streams is None:
            if len(_STREAMS) >= 8:
                _STREAMS.clear()
            streams = _STREAMS[key] = {}
        stream = streams.get(rank)
        if stream is None:
            stream = streams[rank] = _Stream(self._rng(rank))
        draws = stream.draws
        need = start + n - len(draws)
        if need > 0:  # the stream's next factors (drawn in any batch size: same values)
            draws.extend(stream.gen.lognormal(-0.5 * s * s, s, max(need, 8)).tolist())
        return draws[start:start + n]

    def base_time(self, op: Compute, device: int) -> float:
        key = (self._kind(device), op.phase, op.layers, op.nbytes, op.flops, op.seconds)
        t = self._cache.get(key)
        if t is not None:
            return t
        spec = self.platform.spec(device)
        prof = self.profile(device)
        lo, hi = op.layers if op.layers is not None else (0, self.num_layers)
        if op.seconds is not None:
            t = op.seconds
        elif op.phase == "forward":
            pre = self._fwd_prefix[spec.name]
            t = float(pre[hi] - pre[lo])
            # a slow input pipeline (prefetching) starves the step: the wait shows up here
            if op.layers is None and prof.input_time > prof.compute_time:
                t += prof.input_time - prof.compute_time
        elif op.phase == "backward":
            pre = self._bwd_prefix[spec.name]
            t = float(pre[hi] - pre[lo])
        elif op.phase == "update":
            frac = (op.nbytes / self.grad_bytes) if op.nbytes is not None else 1.0
            t = prof.update_time * frac
        elif op.phase in ("elastic", "accumulate"):
            # elementwise over nbytes of fp32: read two buffers, write one (or two for
            # elastic, which moves both the local and the centre copy)
            nbytes = op.nbytes if op.nbytes is not None else self.grad_bytes
            passes = 5.0 if op.phase == "elastic" else 3.0
            t = nbytes * passes / (spec.mem_bw * spec.mem_efficiency) + spec.overhead
        else:  # custom
            t = op.flops / (spec.peak * spec.efficiency)
        if op.seconds is None:  # a given duration is not the device's work
            t *= self._shares.get(device, 1.0)
        self._cache[key] = t
        return t

    def _kind(self, device: int) -> str:
        """The cache key of ``device``'s costs: its kind's name, with the time-sharing
        factor when it has one (devices of one kind shared differently cost differently)."""
        name = self._kinds.get(device)
        if name is None:
            name = self.platform.spec(device).name
            share = self._shares.get(device)
            if share is not None:
                name = f"{name}*{share!r}"
            self._kinds[device] = name
        return name

    def share_devices(self, placement: list[int] | tuple[int, ...], roles: list[str]) -> None:
        """Charge the actors of time-shared devices their share (:mod:`.sharing`); called
        once the actors are placed.  A no-op on platforms without a time-shared kind."""
        self._shares = device_factors(self.platform, placement, roles)
        self._kinds.clear()  # keys are made again, with the factors

    def op_table(self, device: int) -> dict[int, tuple[Compute, float, bool]]:
        """The operation cache of ``device``'s kind: ``id(op) -> (op, base time, jittered)``.

        Algorithms reuse their (immutable) operation objects, so a cost is looked up by
        identity (the entry keeps a reference to ``op``, so its id is never recycled while
        cached; check ``entry[0] is op``).  Devices of one kind share a table: the base time
        depends on the kind only.  The engine reads this table directly in its hot loop and
        falls back to :meth:`entry` on a miss.
        """
        kind = self._kind(device)
        table = self._tables.get(kind)
        if table is None:
            table = self._tables[kind] = {}
        return table

    def entry(self, op: Compute, device: int) -> tuple[Compute, float, bool]:
        """``(op, base time, whether jitter applies)`` of ``op`` on ``device``, cached."""
        table = self.op_table(device)
        hit = table.get(id(op))
        if hit is not None and hit[0] is op:
            return hit
        # an equal operation built by another actor (each worker builds its own) costs the
        # same: look it up by value (Compute's equality ignores fn and data, which do not
        # change the time)
        kind = self._kind(device)
        same = self._by_value.get((kind, op))
        if same is None:
            t = self.base_time(op, device)
            same = self._by_value[(kind, op)] = (t, self._sigma > 0 and t > 0
                                                 and op.phase in ("forward", "backward"))
        e = (op, same[0], same[1])
        table[id(op)] = e
        return e

    def compute(self, op: Compute, actor: ActorSpec, device: int, iteration: int) -> float:
        """Seconds ``op`` takes on ``device`` this time: base time x the actor's next jitter
        factor (forward and backward passes only)."""
        _, t, jittered = self.entry(op, device)
        if jittered:
            t *= self.draw_jitter(actor.rank)
        return t

    def staging_time(self, op: Collective, devices: tuple[int, ...]) -> float:
        """Device<->host copy of a host-staged collective, over each device's first link."""
        if not op.staged or op.nbytes <= 0:
            return 0.0
        worst = 0.0
        for d in devices:
            bw = self._host_link_bw(d)
            worst = max(worst, op.nbytes / bw)
        return worst

    def _host_link_bw(self, device: int) -> float:
        """The slowest link out of the device, at the capacity the network runs it at.

        Why the capacity array and not the graph's ``bandwidth`` attribute: a platform with
        its links rescaled (the what-if page's bandwidth factors, ``scaled_platform``) keeps
        its graph and changes the capacities only, so the staging copy of a host-staged
        collective (``ar``) stayed at 1x speed on a 2x page - 2.2-2.7 % off a prediction with
        every link doubled (QA 12 F3)."""
        plat = self.platform
        name = plat.devices[device]
        cap = plat.capacity
        bws = [float(cap[data["link"]]) for data in plat.out_links(name).values()]
        return min(bws) if bws else float("inf")
