"""From microbenchmark rows to a calibration profile: the order of the fits and their glue.

1. **Ping-pong** -> piecewise alpha-beta (:mod:`.alphabeta`) -> the link class between the
   two ranks (its bandwidth and hop latency) and its protocol table.
2. **GEMM + memory + reduce** -> the device's roofline (:mod:`.computefit`): efficiency
   per kernel class, sustained memory bandwidth, per-kernel overhead, reduction rate.
3. **Noise** (one GEMM timed call by call) -> the device's compute jitter (the coefficient
   of variation of a call), applied as the workload's ``jitter``.
4. **Collectives** -> per-step overhead (:mod:`.collfit`), against the simulator's costing
   of the same schedules on the platform and network *already calibrated by 1 and 2* - so
   the step overhead absorbs only what messages and reductions do not explain - and a
   collective efficiency per protocol segment, where the collective fit may split a
   ping-pong segment at breakpoints of its own (the inserted segments get their own lines
   in the fit report, and the ping-pong segments' lines are renumbered to the final table).

Which device and link class the measurements describe comes from a :class:`Target`: the
platform the ranks ran on (``topologies/localhost.yaml`` for this machine) and where each
rank sat.  The link class is that of the narrowest link between the ping-pong pair.

Uncertainty of derived parameters: a model parameter computed from a fitted one (a segment's
efficiency from its beta, the hop latency from an alpha) gets the fitted parameter's 95 %
interval carried through the same formula, the others held fixed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clustersim.calibration.alphabeta import LinkModel, PiecewiseFit, fit_piecewise, link_model
from clustersim.calibration.collfit import CollectiveFit, at_efficiency_bound
from clustersim.calibration.collsplits import fit_collectives
from clustersim.calibration.computefit import ComputeFit, fit_compute
from clustersim.calibration.fitlines import (
    FitLine,
    compute_lines,
    pingpong_lines,
    split_lines,
    split_note,
)
from clustersim.calibration.ppcheck import (
    check_pingpong,
    fit_verdict,
    fit_warnings,
    readable_sizes,
    size_note,
)
from clustersim.calibration.profile import Profile
from clustersim.calibration.retune import retune_platform
from clustersim.calibration.sharefit import ranks_sharing
from clustersim.errors import InputError
from clustersim.network.params import NetworkParams, bottleneck_class
from clustersim.platform.model import Platform

__all__ = ["Target", "make_target", "FitLine", "Calibration", "calibrate_rows",
           "COLLECTIVE_MODES"]

#: which implementation of collectives the step overhead describes
COLLECTIVE_MODES = ("library", "schedules")


@dataclass(frozen=True)
class Target:
    """Where the benchmarks ran: the platform, the device of each MPI rank, and what the
    ping-pong pair measured (device name of rank 0, link class and hops between ranks 0, 1)."""

    platform: Platform
    placement: tuple[int, ...]
    device: str
    link: str | None
    hops: int


def make_target(platform: Platform, ranks: int, hosts: Sequence[str] | None = None,
                link: str | None = None) -> Target:
    """Place ``ranks`` MPI ranks on ``platform``.

    ``hosts[r]`` (host names from the trace headers) puts ranks of one host name on one
    machine, machines in order of first appearance; without it every rank is on the first
    machine(s), filling devices in order.  ``link`` overrides the link class the ping-pong
    is attributed to.
    """
    by_machine: dict[int, list[int]] = {}
    for d in range(platform.num_devices):
        by_machine.setdefault(platform.host(d), []).append(d)
    machines = sorted(by_machine)
    if hosts:
        if len(hosts) < ranks:
            raise InputError(f"{ranks} ranks but host names for {len(hosts)}")
        order: list[str] = []
        for h in hosts[:ranks]:
            if h not in order:
                order.append(h)
        if len(order) > len(machines):
            raise InputError(f"the traces come from {len(order)} hosts but platform "
                             f"{platform.name!r} has {len(machines)} machines "
                             f"(--platform names the platform the ranks ran on)")
        used: dict[int, int] = {}
        placement = []
        for h in hosts[:ranks]:
            m = machines[order.index(h)]
            i = used.get(m, 0)
            if i >= len(by_machine[m]):
                raise InputError(f"host {h!r} ran more ranks than machine {m} of platform "
                                 f"{platform.name!r} has devices ({len(by_machine[m])})")
            placement.append(by_machine[m][i])
            used[m] = i + 1
    else:
        flat = [d for m in machines for d in by_machine[m]]
        if ranks > len(flat):
            raise InputError(f"{ranks} ranks but platform {platform.name!r} has "
                             f"{len(flat)} devices")
        placement = flat[:ranks]
    device = platform.spec(placement[0]).name
    hops = 0
    cls = None
    if ranks >= 2:
        route = platform.route(placement[0], placement[1])
        hops = len(route)
        cls = bottleneck_class(route, platform.capacity, platform.link_kind)
    if link is not None:
        if link not in set(platform.link_kind):
            from clustersim.errors import unknown_name

            raise unknown_name("link class", link, sorted(set(platform.link_kind)),
                               path=("--link",))
        cls = link
    return Target(platform, tuple(placement), device, cls, hops)


@dataclass
class Calibration:
    """Everything one calibration produced; ``profile`` is what gets written."""

    profile: Profile
    target: Target
    params: NetworkParams
    platform: Platform
    pingpong: PiecewiseFit | None = None
    link: LinkModel | None = None
    compute: ComputeFit | None = None
    collective: CollectiveFit | None = None
    lines: list[FitLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _rows(rows: Sequence[Mapping[str, Any]], bench: str) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("bench") == bench]


def _plan_labelled(gemm: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], int]:
    """GEMM rows without a ``class`` get the label the measurement plan (full or quick) gave
    their shape, and how many did.

    Why: recorded traces carry no class (``calibrate --real`` labels its rows itself, a refit
    from traces did not), and the shape rule alone calls most of the plan's convolution GEMMs
    ``fc`` (576x64x12544, 784x256x2304 ...), which lifts the fitted fc rate by their 90-100
    GFLOP/s.  Shapes the plan does not know keep the shape rule."""
    from clustersim.calibration.measure import bench_plan

    labels = {k: v for quick in (True, False) for device in ("cpu", "gpu")
              for k, v in bench_plan(quick, device).gemm_classes.items()}
    out: list[Mapping[str, Any]] = []
    n = 0
    for r in gemm:
        key = (int(r["m"]), int(r["n"]), int(r["k"]))
        if r.get("class") is None and key in labels:
            r = {**r, "class": labels[key]}
            n += 1
        out.append(r)
    return out, n


def calibrate_rows(rows: Sequence[Mapping[str, Any]], target: Target, *,
                   breakpoints: Sequence[float] | None = None, max_segments: int = 4,
                   min_points: int = 3, loss: str = "soft_l1", f_scale: float = 0.05,
                   collectives: str = "library", duplex: str = "keep",
                   collective_splits: int = 2, collective_min_rows: int = 2,
                   about: str = "", source: Mapping[str, Any] | None = None) -> Calibration:
    """Fit every parameter the rows can tell (module docs) and build the profile.

    ``collectives``: which collective rows set the step overhead - ``library`` (rows of the
    MPI library, ``algorithm: mpi``: what ``run --real`` uses by default) or ``schedules``
    (our schedules executed with point-to-point messages).  ``duplex``: the measured link
    class's duplex mode - ``keep``, ``full``, ``half`` or ``auto`` (chosen by the collective
    fit, :func:`.collsplits.fit_collectives`).  ``collective_splits``: how many breakpoints of
    its own the collective fit may insert into the ping-pong segments (0: none), each piece
    determined by at least ``collective_min_rows`` rows (:func:`.collsplits.
    fit_collective_splits`).
    """
    if collectives not in COLLECTIVE_MODES:
        from clustersim.errors import unknown_name

        raise unknown_name("collectives", collectives, COLLECTIVE_MODES, path=("collectives",))
    plat = target.platform
    prof = Profile(about=about, source=dict(source or {}))
    notes: list[str] = []
    lines: list[FitLine] = []
    params = NetworkParams()
    pw = lm = None
    pp = _rows(rows, "pingpong")
    if pp:
        if target.link is None or target.hops < 1:
            raise InputError("ping-pong rows need two ranks on different devices of the "
                             "platform (check --platform)")
        sizes = [float(r["size"]) for r in pp]
        times = [float(r["time"]) for r in pp]
        check_pingpong(sizes, breakpoints)
        pw = fit_piecewise(sizes, times, breakpoints=breakpoints, max_segments=max_segments,
                           min_points=min_points, loss=loss, f_scale=f_scale)
        cls = target.link
        rid = plat.link_kind.index(cls)
        lm = link_model(pw, target.hops, float(plat.capacity[rid]))
        if any(p.visible and p.beta > 0 for p in pw.pieces):
            prof.links[cls] = {"bandwidth": lm.bandwidth, "latency": lm.latency}
        else:  # the platform's bandwidth is no measurement: the profile does not carry it
            prof.links[cls] = {"latency": lm.latency}
            notes.append(f"ping-pong: no segment shows its bandwidth term (every size is "
                         f"dominated by its latency): link class {cls!r} keeps the "
                         f"platform's bandwidth; measure larger messages to fit it")
        prof.protocols[cls] = lm.segments
        params = NetworkParams(protocols={cls: lm.segments})
        lines += pingpong_lines(pw, lm, cls)
        bps = ", ".join(size_note(b) for b in pw.breakpoints) or "none"
        notes.append(f"ping-pong: {len(pw.pieces)} segment(s), breakpoints {bps} "
                     f"({'detected' if pw.detected else 'given'})")
        notes += [f"ping-pong: {readable_sizes(r)}; fitted with fewer segments"
                  for r in pw.refused]
    cf = None
    gemm, mem, red = _rows(rows, "gemm"), _rows(rows, "memory"), _rows(rows, "reduce")
    gemm, n_labelled = _plan_labelled(gemm)
    if n_labelled:
        notes.append(f"{n_labelled} unlabelled GEMM row(s) classed by the measurement plan's "
                     f"labels for their shapes")
    if gemm or mem or red:
        spec = plat.spec(target.placement[0])
        if gemm or [r for r in mem if r.get("kernel", "copy") == "copy"]:
            cf = fit_compute(gemm, mem, red, spec, loss=loss, f_scale=f_scale,
                             sharing=ranks_sharing(plat, target.placement))
            dev: dict[str, Any] = {"peak": cf.peak, "mem_bw": cf.mem_bw,
                                   "mem_efficiency": min(cf.mem_efficiency, 1.0),
                                   "overhead": cf.overhead}
            if cf.efficiency:
                dev["efficiency"] = min(cf.efficiency["fc"], 1.0)
                dev["efficiency_by_class"] = {c: min(e, 1.0) for c, e in cf.efficiency.items()}
            if cf.reduce_rate is not None:
                dev["reduce_rate"] = cf.reduce_rate
            if cf.pack_rate is not None:
                dev["pack_rate"] = cf.pack_rate
            if cf.share is not None:
                dev["share_efficiency"] = cf.share.value
            prof.devices[target.device] = dev
            lines += compute_lines(cf, target.device)
            notes += cf.notes
            if cf.inherited:
                notes.append("kernel classes without their own GEMMs: " + ", ".join(
                    f"{c} = {s}" for c, s in sorted(cf.inherited.items())))
        elif red:
            from clustersim.calibration.computefit import fit_reduction

            rf = fit_reduction(red, loss=loss, f_scale=f_scale)
            prof.devices[target.device] = {"reduce_rate": rf["rate"]}
            lo, hi = rf.interval("rate")
            lines.append(FitLine(f"device.{target.device}.reduce_bw", rf["rate"], lo, hi,
                                 "B/s", rf.points, rf.rms_rel, "reduce"))
    noise = _rows(rows, "noise")
    if noise:
        # the machine's compute noise: the CV of one GEMM's calls, every rank computing; the
        # range of the per-rank, per-round samples stands in for an interval
        row = max(noise, key=lambda r: int(r.get("calls", 0)))
        prof.devices.setdefault(target.device, {})["jitter"] = float(row["cv"])
        lines.append(FitLine(f"device.{target.device}.jitter", float(row["cv"]),
                             float(row["cv_low"]), float(row["cv_high"]), "1",
                             int(row["samples"]), math.nan, "noise"))
        notes.append(f"compute noise: {int(row['calls'])} calls of a {row['m']}x{row['n']}x"
                     f"{row['k']} GEMM, CV {row['cv']:.3g} (median of {row['samples']} "
                     f"rank/round samples, {row['cv_low']:.3g} .. {row['cv_high']:.3g}); "
                     f"applied as workload.jitter")
    dev_fields = {k: v for k, v in prof.devices.get(target.device, {}).items()
                  if k not in ("efficiency_by_class", "jitter")}
    tuned = retune_platform(plat, {target.device: dev_fields} if dev_fields else {},
                            prof.links)
    cfit = None
    coll = [r for r in _rows(rows, "collective")
            if (r.get("algorithm") == "mpi") == (collectives == "library")]
    if coll:
        nranks = max(int(r["ranks"]) for r in coll)
        if nranks > len(target.placement):
            raise InputError(f"collective rows have {nranks} ranks but the target places "
                             f"{len(target.placement)}")
        cfit, tuned = fit_collectives(coll, tuned, target.placement, params, target.link,
                                      duplex=duplex, max_splits=collective_splits,
                                      min_rows=collective_min_rows, loss=loss,
                                      f_scale=f_scale,
                                      offered=pw.refused_starts if pw is not None else ())
        if cfit.splits and target.link is not None and lm is not None:
            lines = split_lines(lines, target.link, lm.segments, cfit)
            notes.append(split_note(cfit, lm.segments))
            taken = [c for c in cfit.splits if pw is not None and c in pw.refused_starts]
            if taken:
                notes.append("collectives: " + ", ".join(size_note(c) for c in taken) + " from "
                             "the refused ping-pong segmentation (kept without the BIC test: "
                             "the ping-pong chose the position, the collective rows give the "
                             "efficiencies)")
        if cfit.duplex is not None and target.link is not None:
            prof.links.setdefault(target.link, {})["duplex"] = cfit.duplex
            if len(cfit.costs) > 1:
                notes.append(
                    f"collectives: link class {target.link!r} fits best as "
                    f"{'full' if cfit.duplex else 'half'}-duplex (robust cost "
                    + ", ".join(f"{'full' if m else 'half'} {c:.3g}"
                                for m, c in sorted(cfit.costs.items(), reverse=True)) + ")")
        if cfit.fit is not None:
            params = cfit.apply(params, target.link)
            prof.network["step_overhead"] = cfit.step_overhead
            if target.link in prof.protocols:
                prof.protocols[target.link] = dict(params.protocols)[target.link]
            f = cfit.fit
            lo, hi = f.interval("step_overhead")
            lines.append(FitLine("network.step_overhead", cfit.step_overhead, max(lo, 0.0), hi,
                                 "s", f.points, f.rms_rel, "collective"))
            for k, eff in sorted(cfit.collective_efficiency.items(),
                                 key=lambda kv: -1 if kv[0] is None else kv[0]):
                name = f"collective_efficiency[{k}]"
                if name not in f.names:
                    continue
                lo, hi = f.interval(name)
                if at_efficiency_bound(eff) is not None:
                    where = "every message" if k is None else f"segment {k}"
                    notes.append(
                        f"collective efficiency of {where} stopped at its bound ({eff:g}): "
                        f"point-to-point timings do not describe how the runtime's "
                        f"collectives move these sizes")
                if k is None:
                    prof.network["collective_efficiency"] = eff
                    pname = "network.collective_efficiency"
                else:
                    pname = f"network.protocol.{target.link}.{k}.collective_efficiency"
                lines.append(FitLine(pname, eff, lo, hi, "1", f.points, f.rms_rel,
                                     "collective"))
    prof.fit = [ln.as_dict() for ln in lines]
    prof.warnings = fit_warnings(lines) + fit_verdict(lines)  # the verdict last: it closes
    cal = Calibration(prof, target, params, tuned, pw, lm, cf, cfit, lines, notes)
    from clustersim.calibration.covariance import calibration_blocks

    prof.covariance = calibration_blocks(cal)  # read back as uncertainty (predict)
    return cal
