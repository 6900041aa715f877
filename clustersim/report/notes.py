"""Notes under ``predict``'s tables where a figure would otherwise be read for more than it is.

Why a module of its own: each note is a check of the points against a reading a user is
likely to make (QA pass 11 made each of them), and :mod:`clustersim.report.training` holds
the tables.  Each returns words or None, so that the table code only prints them:

* :func:`split_note` - strong scaling whose global batch does not divide among the workers:
  each worker takes ``round(global / W)`` samples, so the "fixed" global batch moves;
* :func:`mean_note` - workers of different speeds: ``iter (ms)`` is the mean of their own
  iteration times, and ``samples/s`` the sum of their rates, so ``W x batch / iter`` is not
  the throughput;
* :func:`extrapolation_note` - a step's effective batch far above the convergence profile's
  largest gradient noise scale: the time to target extrapolates the large-batch law;
* :func:`switch_note` - a parameter server's points on both sides of ``fidelity: auto``'s
  switch of point-to-point messages from flows to link queues: two queueing disciplines,
  which part by 40 % on a communication-bound server (docs/fidelity.md) - or all of them
  above it, with the server bound by its link;
* :func:`target_line` - what the time to target is to, and the assumptions it hangs on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["split_note", "mean_note", "extrapolation_note", "switch_note", "target_line",
           "EXTRAPOLATION"]

#: iteration time as FIFO link queues against max-min flows on docs/fidelity.md's link-bound
#: parameter server (fattree_k16, 60 workers, 4 shards): -40 %
_FLOW_QUEUE_GAP = 40

#: a step's effective batch this many times the profile's largest noise scale is called an
#: extrapolation: McCandlish et al. (2018, fig. 4-5) measure the steps/samples trade-off
#: up to a few times B_noise, and their law's linear growth of samples beyond it is an
#: asymptote, not a measurement
EXTRAPOLATION = 10.0
#: ``W x batch / iter`` this far from ``samples/s`` (relative) is worth a note; with 2%
#: compute noise the two differ by well under 0.1% (Jensen's gap of 1/t)
MEAN_GAP = 0.02


def split_note(scn: Any) -> str | None:
    """Strong scaling: the worker counts whose ``round(global / W)`` samples each do not add
    up to the global batch, and what they add up to."""
    from clustersim.sim.sweep import batch_per_worker

    sw, wl = scn.sweep, scn.workload
    if sw is None or sw.scaling != "strong" or wl is None or wl.global_batch is None:
        return None
    total = int(wl.global_batch)
    odd = [(w, batch_per_worker(scn, w) * w) for w in sw.workers]
    odd = [(w, g) for w, g in odd if g != total]
    if not odd:
        return None
    shown = ", ".join(f"{g:,} at {w:,}" for w, g in odd[:6])
    more = f" and {len(odd) - 6} more" if len(odd) > 6 else ""
    return (f"strong scaling: a global batch of {total:,} does not split evenly over every "
            f"worker count; each worker takes round({total:,} / workers) samples, so the "
            f"global batch is {shown}{more} (speedups compare those batches)")


def mean_note(pts: Sequence[Any]) -> str | None:
    """The first point whose ``workers x batch / iter`` misses ``samples/s`` by more than
    :data:`MEAN_GAP`: its workers run at different paces (device types, placements)."""
    for p in pts:
        if p.workers < 2 or p.iteration_time <= 0 or p.throughput <= 0:
            continue
        naive = p.workers * p.batch_per_worker / p.iteration_time
        if abs(naive - p.throughput) > MEAN_GAP * p.throughput:
            return (f"iter (ms) is the mean of the workers' own iteration times, and they "
                    f"differ; samples/s is the sum of their rates: at {p.workers:,} workers "
                    f"{p.workers:,} x {p.batch_per_worker:g} / {p.iteration_time * 1e3:,.1f} ms "
                    f"= {naive:,.0f} samples/s, against the {p.throughput:,.0f} they do")
    return None


def extrapolation_note(scn: Any, pts: Sequence[Any]) -> str | None:
    """The largest point whose step's effective batch is over :data:`EXTRAPOLATION` times
    the profile's largest noise scale, in words; None where the law is within reach."""
    wl = scn.workload
    profile = getattr(wl, "convergence", None) if wl is not None else None
    if profile is None:
        return None
    top = max(profile.noise.breakpoint_values())
    for p in reversed(list(pts)):
        batch = (p.convergence_terms or {}).get("batch_eff")
        if p.time_to_target is None or not batch or batch <= EXTRAPOLATION * top:
            continue
        eff = p.statistical_efficiency
        epochs = p.epochs_to_target
        what = ", ".join(x for x in (
            f"statistical efficiency {eff:.1%}" if eff is not None else "",
            f"{epochs:,.0f} epochs" if epochs is not None else "") if x)
        return (f"time to target at {p.workers:,} workers extrapolates: a step's effective "
                f"batch of {batch:,.0f} is {batch / top:,.0f}x the profile's largest gradient "
                f"noise scale ({top:,.0f}), far past the batches the large-batch law was "
                f"measured at ({what}); read it as 'this batch trains inefficiently', not as "
                "a time to plan with (docs/convergence.md)")
    return None


def switch_note(scn: Any, alg: Any, pts: Sequence[Any]) -> str | None:
    """Where ``fidelity: auto`` ran some of a parameter server's points with point-to-point
    messages as max-min flows (up to ``P2P_FLOW_MAX_ACTORS`` actors) and others as FIFO link
    queues, the words for it; and where it ran them all as queues with the server bound by
    its link (``service_bound``), the words for that.  None otherwise (other fidelities,
    algorithms whose messages take turns by protocol - the EASGD masters' rendezvous, where
    the two agree exactly - or without servers).

    Why: the two part on a communication-bound server (QA 13: 817 samples/s at 60 workers,
    1,472 at 61, "efficiency 166 %", with nothing said), and which one a point ran was not
    shown anywhere.  A sweep that starts above the switch had no note at all, although it is
    where they part too: a link-bound server of 124 workers on fattree_k16 reads 1,471
    samples/s as queues and 914 as flows.  The two are two servers, SimGrid says
    (tests/test_simgrid_ps.py): flows one that takes every push at once, queues one that
    takes one at a time - the note names both, so that a user knows which to ask for."""
    from clustersim.algorithms.base import get_algorithm
    from clustersim.sim.p2p import P2P_FLOW_MAX_ACTORS

    if scn.run.fidelity != "auto" or not pts:
        return None
    defn = get_algorithm(alg.name)
    if defn.convergence == "elastic" or defn.family == "hybrid":
        return None
    servers = defn.servers(alg.params)
    if not servers:
        return None
    flows = [p.workers for p in pts if p.workers + servers <= P2P_FLOW_MAX_ACTORS]
    queues = [p.workers for p in pts if p.workers + servers > P2P_FLOW_MAX_ACTORS]
    if flows and queues:
        return (f"up to {max(flows):,} workers its messages ran as flows sharing links "
                f"max-min, from {min(queues):,} on as FIFO link queues (run.fidelity: auto "
                f"switches above {P2P_FLOW_MAX_ACTORS} actors); on a communication-bound "
                f"server the two can differ by {_FLOW_QUEUE_GAP} %, so the curve may jump "
                "there (docs/fidelity.md) - run.fidelity: flow gives one model throughout")
    bound = [p.workers for p in pts if p.workers + servers > P2P_FLOW_MAX_ACTORS
             and getattr(p, "service_bound", "") == "link"]
    if flows or not bound:
        return None
    return (f"its messages ran as FIFO link queues (run.fidelity: auto, above "
            f"{P2P_FLOW_MAX_ACTORS} actors) and its server is bound by its link at "
            f"{_workers_list(bound, queues)} workers: that is a server taking one push at a "
            "time (a blocking MPI_Recv(ANY_SOURCE) loop; SimGrid agrees within 0.05 %); one "
            "that takes every push at once (TCP streams, a receive posted per worker, as "
            f"below {P2P_FLOW_MAX_ACTORS + 1} actors) shares the link max-min and its "
            "iterations were 1.2-2.8x as long in SimGrid's check (docs/fidelity.md) - "
            "run.fidelity: flow models that one (its cost grows about as the workers "
            "squared)")


def _workers_list(ws: Sequence[int], among: Sequence[int]) -> str:
    """``68``, ``68 and 272``, ``68, 272 and 4,253``, or ``68 to 4,253`` where ``ws`` are all
    of ``among`` (the points in question, in sweep order)."""
    if len(ws) > 3 and list(ws) == list(among):
        return f"{ws[0]:,} to {ws[-1]:,}"
    if len(ws) > 3:
        return f"{len(ws)} points from {ws[0]:,} to {ws[-1]:,}"
    text = [f"{w:,}" for w in ws]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


def shared_server_note(scn: Any, alg: Any, pts: Sequence[Any]) -> str | None:
    """The points where the platform's devices all hold workers, so that the algorithm's
    servers take the first workers' devices (``sim.sweep.place_actors``) and share them,
    time-sliced (:mod:`clustersim.sim.sharing`); None where every server has a device of
    its own (or sits beside its group, as a hybrid's leaders do).

    Why: docs/algorithms.md said so, the output did not - 16 workers and 2 shards on a
    16-device platform validated and ran with the shards on workers' GPUs unseen (QA 18b)."""
    from clustersim.algorithms.base import get_algorithm
    from clustersim.sim.sweep import place_actors

    defn = get_algorithm(alg.name)
    servers = defn.servers(alg.params)
    placement = getattr(scn, "placement", None)
    if not servers or defn.family == "hybrid" or getattr(placement, "server", "") == "machine":
        return None
    n = scn.platform.num_devices
    shared = [p.workers for p in pts if any(d < p.workers for d in
                                            place_actors(p.workers, servers, n)[p.workers:])]
    if not shared:
        return None
    at = ", ".join(f"{w:,}" for w in shared[:4]) + (" ..." if len(shared) > 4 else "")
    each = "each of its servers a device" if servers > 1 else "its server a device"
    return (f"at {at} workers the platform's {n:,} devices cannot give {each} of its own: "
            f"a server without one shares one of the first workers' devices, time-sliced "
            f"with it (docs/algorithms.md; placement.server: machine gives servers machines "
            f"of their own)")


def target_line(scn: Any) -> str | None:
    """What the time to target is *to*, and what it hangs on: the target, the reference the
    steps are scaled from, the noise scale (said to be assumed where the profile says so)
    and the asynchrony constants; None without an analytic profile.

    Why: the tables printed "time to target" with no metric or value, and every shipped
    ImageNet figure rests on an assumed noise-scale schedule that only ``--json`` showed
    (QA 16)."""
    wl = scn.workload
    prof = getattr(wl, "convergence", None) if wl is not None else None
    if prof is None or scn.run.convergence not in ("auto", "analytic"):
        return None
    pts = prof.noise.points
    noise = (f"{pts[0][1]:,.0f}" if len(pts) == 1 else
             " -> ".join(f"{v:,.0f}" for _, v in pts) + " over training")
    from clustersim.convergence.profile import mentions_noise_scale

    assumed = any(mentions_noise_scale(a) for a in prof.assumed)
    ref = (f"{prof.epochs:g} epochs" if prof.epochs is not None
           else f"{prof.ref_steps:,.0f} steps") + f" at batch {prof.ref_batch:g}"
    if prof.constants is not None:
        consts = "the scenario's"
    else:
        from clustersim.convergence.constants import shipped_statuses

        by: dict[str, list[str]] = {}
        for name, status in shipped_statuses().items():
            by.setdefault(status or "unstated", []).append(name.replace("_", " ")
                                                           if name == "gossip_share" else name)
        consts = "; ".join(f"{s} {', '.join(n)}" for s, n in by.items()) + " (constants.yaml)"
    if prof.constants_warnings:  # calibrate --emulation wrote them into the file
        said = list(prof.constants_warnings[:3])
        more = len(prof.constants_warnings) - len(said)
        consts += f" (its file warns: {'; '.join(said)}{f'; and {more} more' if more else ''})"
    return (f"time to target: {prof.target_metric} {prof.target_value:g} ({prof.model} "
            f"profile: {ref}, {prof.lr_rule} LR; gradient noise scale {noise}"
            f"{', assumed' if assumed else ''}; asynchrony constants: {consts}; "
            f"docs/convergence.md)")
