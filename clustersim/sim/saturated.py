"""Points past a master's saturation, extended from a simulated saturated point instead of
simulated (the what-if page's fast path; ``predict``, ``sweep`` and ``explore`` simulate
every point).

Why: a master-based method (one parameter server, or the EASGD master) whose master is busy
for the whole measured window is a saturated single server in a closed queueing network:
every worker is queued behind the others, the master serves one exchange after another, and
adding workers only lengthens the queue.  Its steady state then follows from the point
simulated at ``W1`` workers without another simulation at ``W2 > W1``:

* the master's rate does not change: throughput, update rate, server utilisation, service
  time, bytes per iteration and compute per iteration stay;
* a worker's cycle is the queue: iteration time grows as ``W2 / W1`` (throughput = workers x
  batch / iteration time), and with it the saturation figure ``W*`` (W* = W at a saturated
  point), worker utilisation and the communication shares fall as ``W1 / W2``;
* the extra cycle time is spent where the worker waits for the bottleneck: in its send (a
  link-bound master: communication) or for the master's answer (a thread- or processor-bound
  one: waiting);
* every other worker's exchange lands between a worker's read and its push: staleness grows
  by ``W2 - W1``; the run is longer by ``W2 - W1`` exchanges per worker exchange period;
* time to accuracy is recomputed from these figures (sim/tta.py), as for a simulated point.

Simulating a saturated point costs ~80 us of CPU per exchange and W x (warm-up + measured
exchanges) of them: scenarios/knl_4253.yaml's seven master-based methods at 1,088 and 4,253
workers were 85 % of its what-if page's CPU time (45 s on the slow days of this machine).
tests/test_saturated_extension.py compares extended and simulated points at 4,253 workers,
with the master thread-bound and link-bound: every figure within 0.5 % (measured over the
whole knl_4253 page, 86 points: throughput, efficiency and time to target within 0.005 %,
worker utilisation 0.14 %).  One split differs, and there the simulation is the one off its
steady state: the parameter-server baselines with a thread-bound master put 6 % (link 1x) to
40 % (0.5x) of a 4,253-worker iteration into communication, where the extension puts under
1 %; that is the first round's burst of 4,253 pushes still queued at the master's link in
the one measured round - with four warm-up rounds instead of one the simulated share falls to
0.02 %, the iteration time unchanged.  A heterogeneous platform (other devices for the added
workers) is not extended at all, nor a count whose workers reach the master by faster or
slower routes than the base's (workers beside the master on its machine:
:mod:`clustersim.sim.exchange_routes`).

``sim_events`` and ``flows`` of an extended point are 0: nothing was simulated for it.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

from clustersim.sim.metrics import PointMetrics

__all__ = ["MIN_SERVER_UTILIZATION", "lone_master", "extendable", "saturated", "extend_point"]

#: the base point's master must be busy this share of the measured window: never idle, so
#: that its queue never emptied (1 - 1e-3: a float sum of busy spans, not exactly 1)
MIN_SERVER_UTILIZATION = 0.999
#: the base point's staleness must be narrow (max - mean <= this share of the workers): the
#: round-robin order of a saturated FIFO master, where each push saw the W - 1 others land
MAX_STALENESS_SPREAD = 0.02

_TTA = ("steps_to_target", "samples_to_target", "epochs_to_target", "time_to_target",
        "statistical_efficiency", "goodput", "tta_note", "convergence_terms")


def lone_master(scn: Any, alg: Any) -> bool:
    """Whether the case is an asynchronous master-based algorithm with one server on the
    next free device (async / EASGD master methods; not gossip, hybrid or synchronous ones,
    nor a server on a machine of its own): the cases whose points may be extended."""
    from clustersim.algorithms.base import get_algorithm

    defn = get_algorithm(alg.name)
    if defn.family != "async" or defn.convergence not in ("async", "elastic"):
        return False
    if defn.servers(alg.params) != 1:
        return False
    # placement.server: machine - a machine of its own after the workers', another per count
    return scn.placement is None or scn.placement.server != "machine"


def extendable(scn: Any, alg: Any, w1: int, w2: int) -> bool:
    """Whether the point at ``w2`` workers may be extended from a saturated one at ``w1``:
    an asynchronous master-based algorithm with one server (async / EASGD master methods;
    not gossip, hybrid or synchronous ones), the same batch per worker and no ``sweep.at``
    fields at either count, one kind of device for the workers and the master at both, and
    the workers' mean exchange with the master as long, and its busiest link as busy per
    exchange, at both (:func:`~clustersim.sim.exchange_routes.same_exchanges`)."""
    from clustersim.sim.sweep import batch_per_worker

    if not 0 < w1 < w2 or not lone_master(scn, alg):
        return False
    if scn.at_workers(w1) is not scn or scn.at_workers(w2) is not scn:
        return False
    if batch_per_worker(scn, w1) != batch_per_worker(scn, w2):
        return False
    plat = scn.platform
    if not (w2 < plat.num_devices and w2 < _uniform_devices(plat)):
        return False
    from clustersim.sim.exchange_routes import same_exchanges

    # the added workers reach the master as the others do (a master with NVLink neighbours
    # at one count and none at the other serves another mix: audit M), and its busiest link
    # carries as much per exchange (a ring's master fed from one side, then both: audit N)
    return same_exchanges(scn, w1, w2, float(scn.workload.model.grad_bytes))


#: ``id(platform) -> (platform, devices of device 0's kind from device 0 on)``: a page asks
#: for every case and count (134 times for knl_4253, 4,254 devices each: 0.3 s uncached)
_UNIFORM: dict[int, tuple[Any, int]] = {}


def _uniform_devices(plat: Any) -> int:
    """How many devices, from device 0 on, are of device 0's kind."""
    hit = _UNIFORM.get(id(plat))
    if hit is not None and hit[0] is plat:
        return hit[1]
    first = plat.spec(0)
    n = plat.num_devices
    k = next((d for d in range(1, n) if plat.spec(d) != first), n)
    if len(_UNIFORM) >= 64:  # the platforms of one page, not of a whole process's life
        _UNIFORM.clear()
    _UNIFORM[id(plat)] = (plat, k)
    return k


def saturated(m: PointMetrics) -> bool:
    """Whether a simulated point's master was busy for its whole measured window in a
    steady state, serving the workers in a fixed round (:data:`MIN_SERVER_UTILIZATION`,
    :data:`MAX_STALENESS_SPREAD`)."""
    if m.server_utilization is None or m.server_utilization < MIN_SERVER_UTILIZATION:
        return False
    if m.staleness_mean is None or m.staleness_max is None or m.update_rate is None:
        return False
    if m.service_time is None or not (m.update_rate > 0 and m.throughput > 0
                                      and m.iteration_time > 0):
        return False
    # a steady state, not the first round's burst: the master's updates per second times
    # its seconds per update is its utilisation before metrics.py clips it at 1 (a short
    # window read 1.05 to 1.32, and its throughput moved 20 % past it: audit O), and every
    # worker's pace gives the samples per second the run measured
    if abs(m.update_rate * m.service_time - 1.0) > 1.0 - MIN_SERVER_UTILIZATION:
        return False
    paced = m.workers * m.batch_per_worker / m.iteration_time
    if abs(paced - m.throughput) > (1.0 - MIN_SERVER_UTILIZATION) * m.throughput:
        return False
    return m.staleness_max - m.staleness_mean <= MAX_STALENESS_SPREAD * m.workers


def extend_point(scn: Any, alg: Any, base: PointMetrics, workers: int) -> PointMetrics:
    """The point at ``workers`` from the saturated ``base`` (module doc): a new
    :class:`PointMetrics`, its time to accuracy recomputed."""
    from clustersim.sim.runwindow import aligned_run

    w1 = base.workers
    ratio = workers / w1
    grow = workers - w1
    it = base.iteration_time * ratio
    extra = it - base.iteration_time
    link = base.service_bound == "link"
    comm = base.comm + (extra if link else 0.0)
    wait = base.wait + (0.0 if link else extra)
    comm_total = base.comm_total + (extra if link else 0.0)
    tau = max(1, int(alg.params.get("tau", 1)))
    exchanges = aligned_run(scn.run, alg).iterations / tau  # per worker, warm-up included
    defaults = {f.name: f.default for f in fields(PointMetrics) if f.name in _TTA}
    defaults["convergence_terms"] = {}
    m = replace(
        base, **defaults, workers=workers, iteration_time=it, comm=comm, wait=wait,
        comm_total=comm_total, comm_share=comm / it, comm_share_total=comm_total / it,
        worker_utilization=base.compute / it,
        staleness_mean=base.staleness_mean + grow,  # type: ignore[operator]
        staleness_p90=None if base.staleness_p90 is None else base.staleness_p90 + grow,
        staleness_max=base.staleness_max + grow,  # type: ignore[operator]
        makespan=base.makespan + grow * exchanges / base.update_rate,  # type: ignore[operator]
        saturation_workers=(None if base.saturation_workers is None
                            else base.saturation_workers * ratio),
        sim_events=0, flows=0, interval={}, speedup=1.0, efficiency=1.0, seeds=1)
    profile = (scn.workload.convergence if scn.run.convergence in ("auto", "analytic")
               else None)
    if profile is not None and math.isfinite(it):
        from clustersim.sim.sweep import batch_per_worker
        from clustersim.sim.tta import attach_from_stats

        # the base's samples are not kept with its metrics: their mean, moved by the added
        # workers (a saturated round's samples lie within MAX_STALENESS_SPREAD of it)
        attach_from_stats(m, profile, alg, workers, float(batch_per_worker(scn, workers)),
                          [m.staleness_mean], scn.workload.optimizer)  # type: ignore[list-item]
    return m
