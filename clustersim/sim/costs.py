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
from clustersim.workload.compute import ComputeProfile

__all__ = ["CostModel"]


class CostModel:
    def __init__(self, scn: Any, batch: int, seed: int) -> None:
        wl = scn.workload
        self.scn = scn
        self.model = wl.model
        self.batch = batch
        self.optimizer = wl.optimizer
        self.bucket_bytes = wl.bucket_bytes
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
        self._kinds: dict[int, str] = {}
        self._jbuf: dict[int, list[float]] = {}
        self._by_id: dict[tuple[int, int], tuple[Compute, float]] = {}

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
        if self.bucket_bytes is None:
            return ((0, L, self.grad_bytes),)
        prof = self.profile(0)
        pos = {s.name: j for j, s in enumerate(prof.backward)}
        out = []
        prev = -1
        bks = prof.buckets(self.bucket_bytes)
        for k, b in enumerate(bks):
            last = max(pos[n] for n in b.layers)
            if k == len(bks) - 1:
                last = L - 1
            out.append((L - 1 - last, L - 1 - prev, float(b.nbytes)))
            prev = last
        return tuple(out)

    # -- per-operation costs ------------------------------------------------------------------
    def _rng(self, rank: int) -> np.random.Generator:
        g = self._rngs.get(rank)
        if g is None:
            g = self._rngs[rank] = np.random.default_rng([self._seed, 7, rank])
        return g

    def _jitter(self, rank: int) -> float:
        """The next jitter factor of ``rank``: drawn 256 at a time from its own generator
        (one numpy call per 256 operations instead of one each; the sequence is the same
        pure function of seed and rank)."""
        buf = self._jbuf.get(rank)
        if buf is None or not buf:
            s = self._sigma
            buf = self._jbuf[rank] = self._rng(rank).lognormal(-0.5 * s * s, s, 256).tolist()
            buf.reverse()
        return buf.pop()

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
        self._cache[key] = t
        return t

    def _kind(self, device: int) -> str:
        name = self._kinds.get(device)
        if name is None:
            name = self._kinds[device] = self.platform.spec(device).name
        return name

    def compute(self, op: Compute, actor: ActorSpec, device: int, iteration: int) -> float:
        # algorithms reuse their (immutable) operation objects: memoise by identity, keeping a
        # reference so that an id is never recycled while cached
        hit = self._by_id.get((id(op), device))
        if hit is not None and hit[0] is op:
            t = hit[1]
        else:
            t = self.base_time(op, device)
            self._by_id[(id(op), device)] = (op, t)
        if self._sigma > 0 and op.phase in ("forward", "backward") and t > 0:
            t *= self._jitter(actor.rank)
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
        plat = self.platform
        name = plat.devices[device]
        bws = [data["bandwidth"] for _, _, data in plat.graph.out_edges(name, data=True)]
        return min(bws) if bws else float("inf")
