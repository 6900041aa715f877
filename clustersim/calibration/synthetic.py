"""Microbenchmark traces that the *simulator* produces, for round-trip tests of calibration.

Why: a fit can only be trusted if it gives back known parameters.  Here the simulator's own
machinery - the flow network for ping-pong, the flow-level schedule execution for
collectives, the roofline for kernels - plays the machine, with parameters we choose, and
writes its timings as :class:`~clustersim.trace.TraceEvent` records in exactly the format
``realrun.microbench`` writes (``meta.bench``, ``iters``, ``repeat``, ...).  Calibration then
reads them through the same ``results_from_events`` as real traces, so the round trip covers
trace parsing, segmentation, every fit and the conversion back to model parameters.

Optional multiplicative log-normal ``noise`` and ``outliers`` (a fraction of batches slowed
by 50-200 %, as when another job grabs the core) test the robust loss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import simpy

from clustersim.calibration.computefit import gemm_bytes, pack_bytes
from clustersim.collectives import build_schedule
from clustersim.network.fidelity import cost_collective
from clustersim.network.flow import FlowNetwork
from clustersim.network.params import NetworkParams
from clustersim.platform.model import Platform
from clustersim.sim.engine import DEFAULT_ALGORITHMS
from clustersim.trace import TraceEvent
from clustersim.workload.compute import roofline

__all__ = ["one_way_time", "simulated_microbench"]


def one_way_time(platform: Platform, params: NetworkParams, src: int, dst: int,
                 nbytes: float) -> float:
    """Time of one lone message from device ``src`` to ``dst`` on the flow network."""
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, platform, params)
    done = net.transfer(platform.route(src, dst), float(nbytes))
    env.run(done)
    return float(env.now)


class _Clock:
    """Lays batches end to end, as a benchmark run does; applies noise and outliers."""

    def __init__(self, noise: float, outliers: float, seed: int) -> None:
        self.t = 0.0
        self.noise = noise
        self.outliers = outliers
        self.rng = np.random.default_rng([seed, 91])

    def batch(self, duration: float) -> tuple[float, float]:
        f = 1.0
        if self.noise > 0:
            f *= float(self.rng.lognormal(0.0, self.noise))
        if self.outliers > 0 and float(self.rng.random()) < self.outliers:
            f *= 1.0 + float(self.rng.uniform(0.5, 2.0))
        start = self.t
        self.t = start + duration * f
        return start, self.t


def simulated_microbench(
    platform: Platform,
    params: NetworkParams,
    placement: Sequence[int],
    *,
    pingpong_sizes: Sequence[int] = (),
    collective_sizes: Sequence[int] = (),
    collectives: Sequence[tuple[str, str, int]] = (),
    gemm_shapes: Sequence[tuple[int, int, int, str]] = (),
    efficiency: Mapping[str, float] | None = None,
    mem_sizes: Sequence[int] = (),
    reduce_sizes: Sequence[int] = (),
    iters: int = 10,
    repeats: int = 3,
    noise: float = 0.0,
    outliers: float = 0.0,
    seed: int = 0,
) -> list[TraceEvent]:
    """Trace events of a microbenchmark run the simulator performs on ``platform``.

    ``placement[r]`` is the device of MPI rank ``r`` (ping-pong runs between ranks 0 and 1).
    ``collectives``: ``(op, algorithm, ranks)``; ``algorithm`` ``mpi`` is costed with the
    engine's default schedule, as calibration models library rows.  ``gemm_shapes``:
    ``(m, n, k, kernel class)``; ``efficiency`` maps classes to fractions of the device's
    peak (default: the device's own).  Kernels run on rank 0's device.
    """
    clock = _Clock(noise, outliers, seed)
    events: list[TraceEvent] = []
    a, b = placement[0], placement[1] if len(placement) > 1 else placement[0]
    spec = platform.spec(a)
    eff = dict(efficiency or {})

    def emit(kind: str, label: str, per_call: float, meta: dict, actors: Sequence[int],
             rep: int, nbytes: float = 0.0) -> None:
        start, end = clock.batch(per_call * iters)
        for actor in actors:
            events.append(TraceEvent(actor, "bench", kind, start, end, label, nbytes,
                                     meta={**meta, "iters": iters, "repeat": rep}))

    for rep in range(repeats):
        for size in pingpong_sizes:
            rt = (one_way_time(platform, params, a, b, size)
                  + one_way_time(platform, params, b, a, size))
            emit("pingpong", f"pingpong {size}B", rt,
                 {"bench": "pingpong", "size": int(size), "pair": [0, 1]}, [0], rep,
                 float(size))
        for op, alg, p in collectives:
            devs = list(placement[:p])
            hosts = [platform.host(d) for d in devs]
            model = DEFAULT_ALGORITHMS.get(op, "ring") if alg == "mpi" else alg
            for size in collective_sizes:
                sched = build_schedule(op, model, p, float(size), hosts=hosts)
                t = cost_collective(sched, platform, devs, params, fidelity="flow").time
                emit(op, f"{op} {alg}", t,
                     {"bench": "collective", "op": op, "algorithm": alg, "size": int(size),
                      "count": int(size) // 4, "dtype": "float32", "ranks": p},
                     list(range(p)), rep, float(size))
        for m, n, k, cls in gemm_shapes:
            flops = 2.0 * m * n * k
            t, _ = roofline(flops, gemm_bytes(m, n, k), spec, eff.get(cls, spec.efficiency),
                            spec.mem_efficiency, spec.overhead)
            if spec.pack_rate:  # operand packing, as the workload charges it
                t += pack_bytes(m, n, k) / spec.pack_rate
            emit("compute", f"gemm {m}x{n}x{k}", t,
                 {"bench": "gemm", "m": m, "n": n, "k": k, "dtype": "float32", "flops": flops},
                 [0], rep)
        for size in mem_sizes:
            t, _ = roofline(0.0, 2.0 * size, spec, spec.efficiency, spec.mem_efficiency,
                            spec.overhead)
            emit("compute", f"copy {size}B", t,
                 {"bench": "memory", "kernel": "copy", "size": int(size),
                  "bytes_moved": 2 * int(size), "dtype": "float32"}, [0], rep, float(size))
        for size in reduce_sizes:
            emit("compute", f"reduce {size}B", size / spec.reduce_bw,
                 {"bench": "reduce", "size": int(size), "dtype": "float32"}, [0], rep,
                 float(size))
    return events
