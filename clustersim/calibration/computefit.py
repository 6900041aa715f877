"""Compute efficiency per kernel class, memory throughput, kernel overhead, reduction rate.

The model being fitted is the simulator's own roofline (:func:`clustersim.workload.compute.
roofline`): a kernel of ``F`` FLOPs moving ``B`` bytes takes
``max(F / (peak * efficiency), B / (mem_bw * mem_efficiency)) + overhead``.  One joint robust
fit over the GEMM and memory-copy benchmarks gives

* one sustained FLOP rate per kernel class seen among the GEMMs (``efficiency = rate /
  peak``).  A GEMM row carries its class when the measurement plan labelled it (the shapes
  of ``calibrate --real`` come from fully connected and convolution layers); otherwise it
  is classed ``conv`` when it is tall and skinny the way an early im2col convolution is
  (``m >= 4 * max(n, k)``: batch x output pixels rows) and ``fc`` otherwise.  An ``fc`` GEMM
  whose inner dimension is the smallest (``k < min(m, n)``: the plan's weight-gradient shape
  ``(in, out, batch)``) is classed ``fc_wgrad``: a BLAS runs that orientation at a rate of its
  own (measured here: 2048x2048x64 at 67 GFLOP/s, the forward 64x2048x2048 at 45), and one
  ``fc`` rate over both would predict a forward pass too fast.  ``conv`` and ``fc`` without
  GEMMs inherit the other's rate (``fc`` falls back on ``fc_wgrad`` when it is all there
  is); ``fc_wgrad`` is reported only when it had rows of its own - without it the workload
  costs the whole backward pass at the ``fc`` rate, as before.  ``other`` (elementwise
  layers) gets the ``fc`` rate - those kernels are memory-bound, so their FLOP rate never
  binds;
* the sustained memory bandwidth (``mem_efficiency = rate / mem_bw``) from the copies
  (STREAM counting: 2 array sizes per copy; NumPy's two-pass triad is not used) whose
  arrays do not fit a core's private cache - STREAM's rule that arrays must exceed the
  caches, here ``stream_min`` bytes per array (default 4 MiB, a large L2): the roofline has
  no cache model, and the memory-bound kernels that cost time in training (optimizer
  updates, elastic averages, gradient accumulation) stream parameter-sized buffers, while a
  cache-resident copy would report the cache's bandwidth (several times higher).  A large
  shared last-level cache moves the boundary up: on the VM this was written on (105 MiB of
  L3), 4 MiB copies ran at 41-67 GB/s, 16 and 64 MiB ones at 10-23 GB/s, and a training
  step's update (10 MiB arrays between GEMMs and messages) at ~10.5 GB/s.  So of the copies
  above ``stream_min`` only the *plateau* is kept: the largest size and every smaller one,
  down to the first whose median bandwidth exceeds the largest's by more than
  :data:`PLATEAU`x (:func:`memory_plateau`).  When the copies were measured both with every
  rank copying at once and with the other ranks idle in MPI (``context`` of
  :mod:`.contention`), only the former set the bandwidth: a device's ``mem_bw`` is its share
  when every device of the machine streams (the catalog's convention, e.g. a KNL core's
  1/68 of MCDRAM), and a core streaming alone on this VM got 1.5-2x that share;
* the per-kernel overhead, shared by both, which the small kernels pin down;
* the GEMM operand packing rate (``pack_rate``, bytes/s; :func:`clustersim.workload.compute.
  gemm_pack_time`): each GEMM is charged ``4 (mk + kn) / pack_rate`` on top of its roofline.
  Its evidence is the spread of rates *within* a class - 32x1024x2048 against 256x1024x2048
  is the same orientation, at a third of the rate - so it is fitted only when the GEMM rows'
  operand bytes per FLOP differ by at least :data:`PACK_SPREAD`x (otherwise packing and the
  FLOP rate cannot be told apart).  A fitted rate of zero seconds per byte means no packing
  term (``pack_rate`` is then ``None``).

GEMM bytes are ``4 (mk + kn + mn)`` (read A and B, write C, fp32).  When a measured rate
beats the datasheet (a turbo clock, a cache-resident copy), the peak or bandwidth is raised
to it and the efficiency is 1 - stated in the profile.

The reduction rate (``a += b``, operand bytes per second) is fitted on its own as
``time = size / rate``: that is how the collective model charges a reduction (no overhead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clustersim.calibration.fit import FitResult, robust_fit
from clustersim.calibration.sharefit import ShareFit, fit_share, split_contexts
from clustersim.catalog import DeviceSpec

__all__ = ["GEMM_CLASSES", "gemm_class", "is_wgrad_shape", "row_class", "gemm_bytes",
           "pack_bytes", "ComputeFit", "fit_compute", "fit_reduction", "STREAM_MIN",
           "PACK_SPREAD", "PLATEAU", "memory_plateau"]

_FP32 = 4


#: the GEMM classes a fit can have a rate for
GEMM_CLASSES = ("conv", "fc", "fc_wgrad")


def gemm_class(m: int, n: int, k: int) -> str:
    """``conv`` for im2col-shaped GEMMs (many rows), ``fc`` otherwise (module docs)."""
    return "conv" if m >= 4 * max(n, k) else "fc"


def is_wgrad_shape(m: int, n: int, k: int) -> bool:
    """The inner dimension is the smallest: an fc weight gradient ``(in, out, batch)``."""
    return k < min(m, n)


def row_class(row: Mapping[str, Any]) -> str:
    """A GEMM row's efficiency class: its ``class`` label if the plan gave one, else the shape
    rule of :func:`gemm_class`; an ``fc`` row of weight-gradient shape is ``fc_wgrad``."""
    m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
    cls = row.get("class")
    if cls not in GEMM_CLASSES:
        cls = gemm_class(m, n, k)
    if cls == "fc" and is_wgrad_shape(m, n, k):
        return "fc_wgrad"
    return str(cls)


def gemm_bytes(m: int, n: int, k: int) -> float:
    """Bytes an fp32 ``m x n x k`` GEMM moves in the roofline: reads ``A`` and ``B``, writes
    ``C`` (``4 (mk + kn + mn)``, module docs)."""
    return float(_FP32 * (m * k + k * n + m * n))


def pack_bytes(m: int, n: int, k: int) -> float:
    """Bytes a GEMM packs: its two input operands ``A`` (``m x k``) and ``B`` (``k x n``)."""
    return float(_FP32 * (m * k + k * n))


#: packing is fitted when the GEMMs' packed bytes per FLOP span at least this factor
PACK_SPREAD = 2.0

#: a fitted packing term below this share of the median GEMM's time is dropped (noise-free
#: rows without packing fit it to ~1e-6, not to exactly zero)
PACK_MIN_SHARE = 1e-3


@dataclass
class ComputeFit:
    """What the compute benchmarks say about one device (SI units)."""

    peak: float
    mem_bw: float
    efficiency: dict[str, float]  # per class: conv, fc, other (+ fc_wgrad if it had rows)
    mem_efficiency: float
    overhead: float
    reduce_rate: float | None
    rates: dict[str, float]  # sustained FLOP/s per class as fitted
    sustained_mem: float
    inherited: dict[str, str] = field(default_factory=dict)  # class -> class it copies
    pack_rate: float | None = None  # bytes/s of GEMM operand packing; None: not modelled
    fit: FitResult | None = None
    reduce_fit: FitResult | None = None
    notes: list[str] = field(default_factory=list)
    #: a time-shared device's share efficiency (:mod:`.sharefit`); None: not fitted
    share: ShareFit | None = None


#: copies with smaller arrays measure a cache, not memory (see the module docs)
STREAM_MIN = 4 << 20

#: a copy size belongs to the main-memory plateau when its bandwidth is within this factor
#: of the largest size's
PLATEAU = 1.5


def memory_plateau(copies: Sequence[Mapping[str, Any]],
                   plateau: float = PLATEAU) -> list[Mapping[str, Any]]:
    """The copies whose sizes sit on the main-memory plateau (module docs).

    Sizes are walked from the largest down; a size whose median bandwidth (over its rows,
    every context) is more than ``plateau`` times the largest size's ends the walk - it and
    everything smaller ran from a cache.
    """
    by_size: dict[float, list[float]] = {}
    for r in copies:
        by_size.setdefault(float(r["size"]), []).append(
            float(r["bytes_moved"]) / float(r["time"]))
    sizes = sorted(by_size, reverse=True)
    if not sizes:
        return []
    floor = float(np.median(by_size[sizes[0]]))
    keep = set()
    for size in sizes:
        if float(np.median(by_size[size])) > plateau * floor:
            break
        keep.add(size)
    return [r for r in copies if float(r["size"]) in keep]


def fit_compute(gemm: Sequence[Mapping[str, Any]], memory: Sequence[Mapping[str, Any]],
                reduce: Sequence[Mapping[str, Any]], device: DeviceSpec, *,
                loss: str = "soft_l1", f_scale: float = 0.05,
                stream_min: float = STREAM_MIN, sharing: int = 1) -> ComputeFit:
    """Fit the roofline of ``device`` to benchmark rows (``realrun.microbench`` format).

    ``sharing``: how many of the benchmark's ranks computed on one ``time_shared`` device
    (:mod:`.sharefit`: the roofline is then the whole device's, fitted on the rows timed on
    one rank alone, and ``share`` says what the ranks got together)."""
    share_fit = None
    share_note = ""
    if device.time_shared and sharing > 1:
        g_tog, g_alone = split_contexts(gemm)
        m_tog, m_alone = split_contexts(memory)
        share_fit = fit_share([*g_tog, *m_tog], [*g_alone, *m_alone], sharing)
        if share_fit is not None:
            gemm, memory = g_alone, m_alone
            share_note = share_fit.note
        else:
            share_note = (f"time-shared device, but no kernel was timed on one rank alone: "
                          f"the rates are each of the {sharing} ranks' slice, and predictions "
                          f"of several workers on it count the sharing twice")
    all_copies = [r for r in memory if r.get("kernel", "copy") == "copy"]
    if any(r.get("context") is None for r in all_copies):
        all_copies = [r for r in all_copies if r.get("context") is None]
    copies = [r for r in all_copies if float(r["size"]) >= stream_min]
    notes: list[str] = [share_note] if share_note else []
    if all_copies and not copies:
        copies = all_copies
        notes.append(f"no copy has arrays of {stream_min / 2**20:g} MiB or more: memory "
                     f"bandwidth fitted on cache-sized copies (likely too high)")
    else:
        big = len(copies)
        copies = memory_plateau(copies)
        if len(copies) < len(all_copies):
            smallest = min(float(r["size"]) for r in copies) if copies else 0.0
            notes.append(f"memory bandwidth from the {len(copies)} copies with arrays of "
                         f"{smallest / 2**20:g} MiB or more (smaller ones measure caches"
                         + (f"; {big - len(copies)} above {stream_min / 2**20:g} MiB ran "
                            f"faster than {PLATEAU:g}x the largest: a shared cache"
                            if big > len(copies) else "") + ")")
    classes = sorted({row_class(r) for r in gemm})
    p_arr = np.array([pack_bytes(int(r["m"]), int(r["n"]), int(r["k"])) for r in gemm])
    ratio = p_arr / np.maximum(np.array([float(r["flops"]) for r in gemm]), 1.0)
    has_pack = len(gemm) >= 4 and float(ratio.max()) >= PACK_SPREAD * float(ratio.min())
    fit = _solve(gemm, copies, classes, p_arr, has_pack, device, loss, f_scale)
    pack_rate = None
    if has_pack:
        g_times = np.array([float(r["time"]) for r in gemm])
        share = float(np.median(p_arr * fit["pack"] / g_times))
        if share >= PACK_MIN_SHARE:
            pack_rate = 1.0 / fit["pack"]
        else:  # solved again without it: a term at its bound still nudges the others
            notes.append(f"GEMM operand packing fitted to {100 * share:.2g}% of a GEMM's "
                         f"time: not modelled")
            fit = _solve(gemm, copies, classes, p_arr, False, device, loss, f_scale)
    has_mem = "mem" in fit.names
    default_mem = device.mem_bw * device.mem_efficiency
    rates = {c: fit[f"rate_{c}"] for c in classes}
    inherited: dict[str, str] = {}
    if "fc" not in rates and "conv" in rates:
        rates["fc"] = rates["conv"]
        inherited["fc"] = "conv"
    if "fc" not in rates and "fc_wgrad" in rates:
        rates["fc"] = rates["fc_wgrad"]
        inherited["fc"] = "fc_wgrad"
    if "conv" not in rates and "fc" in rates:
        rates["conv"] = rates["fc"]
        inherited["conv"] = "fc"
    peak = device.peak
    best = max(rates.values()) if rates else 0.0
    if best > peak:
        notes.append(f"a GEMM ran at {best / 1e9:.4g} GFLOP/s, above the datasheet peak "
                     f"{peak / 1e9:.4g} GFLOP/s: peak raised to it")
        peak = best
    eff = {c: r / peak for c, r in rates.items()}
    if eff:
        eff["other"] = eff["fc"]
        inherited["other"] = "fc"
    sustained = fit["mem"] if has_mem else default_mem
    mem_bw = device.mem_bw
    if sustained > mem_bw:
        notes.append(f"a copy sustained {sustained / 1e9:.4g} GB/s, above the datasheet "
                     f"{mem_bw / 1e9:.4g} GB/s: mem_bw raised to it")
        mem_bw = sustained
    red_rate, red_fit = None, None
    if reduce:
        red_fit = fit_reduction(reduce, loss=loss, f_scale=f_scale)
        red_rate = red_fit["rate"]
    return ComputeFit(peak, mem_bw, eff, sustained / mem_bw if has_mem else
                      device.mem_efficiency, fit["overhead"], red_rate, rates, sustained,
                      inherited, pack_rate, fit, red_fit, notes, share_fit)


def _solve(gemm: Sequence[Mapping[str, Any]], copies: Sequence[Mapping[str, Any]],
           classes: Sequence[str], p_arr: np.ndarray, has_pack: bool, device: DeviceSpec,
           loss: str, f_scale: float) -> FitResult:
    """The joint robust fit: ``rate_<class>`` per class, ``mem`` (with copies), ``pack``
    (seconds per packed byte, with ``has_pack``) and ``overhead``."""
    names: list[str] = [f"rate_{c}" for c in classes]
    x0: list[float] = []
    scale: list[float] = []
    for c in classes:
        rows = [r for r in gemm if row_class(r) == c]
        guess = float(np.median([float(r["flops"]) / float(r["time"]) for r in rows]))
        x0.append(guess)
        scale.append(guess)
    has_mem = bool(copies)
    if has_mem:
        guess = float(np.median([float(r["bytes_moved"]) / float(r["time"]) for r in copies]))
        names.append("mem")
        x0.append(guess)
        scale.append(guess)
    if has_pack:
        # start at packing taking a tenth of the median GEMM's time: the fit moves it
        med = float(np.median([float(r["time"]) / pb for r, pb in zip(gemm, p_arr)]))
        names.append("pack")
        x0.append(0.1 * med)
        scale.append(0.1 * med)
    names.append("overhead")
    times = [float(r["time"]) for r in (*gemm, *copies)]
    if not times:
        raise ValueError("no GEMM or memory rows to fit")
    x0.append(min(times) * 0.1)
    scale.append(max(min(times) * 0.1, 1e-9))
    f_arr = np.array([float(r["flops"]) for r in gemm], dtype=float)
    b_arr = np.array([gemm_bytes(int(r["m"]), int(r["n"]), int(r["k"])) for r in gemm])
    cls_idx = np.array([classes.index(row_class(r)) for r in gemm], dtype=int)
    moved = np.array([float(r["bytes_moved"]) for r in copies], dtype=float)
    default_mem = device.mem_bw * device.mem_efficiency
    nc = len(classes)

    def model(x: np.ndarray) -> np.ndarray:
        mem = x[nc] if has_mem else default_mem
        o = x[-1]
        out = []
        if gemm:
            rates = x[:nc][cls_idx]
            pack = p_arr * x[-2] if has_pack else 0.0
            out.append(np.maximum(f_arr / rates, b_arr / mem) + pack + o)
        if has_mem:
            out.append(moved / mem + o)
        return np.concatenate(out)

    lower = [0.0] * len(names)
    n_rates = len(names) - 1 - (1 if has_pack else 0)
    lower[:n_rates] = [1.0] * n_rates  # rates: at least 1 per second; pack, overhead >= 0
    return robust_fit(model, times, x0, names, scale=scale, lower=lower, loss=loss,
                      f_scale=f_scale)


def fit_reduction(rows: Sequence[Mapping[str, Any]], *, loss: str = "soft_l1",
                  f_scale: float = 0.05) -> FitResult:
    """``time = size / rate`` over ``a += b`` benchmark rows."""
    sizes = np.array([float(r["size"]) for r in rows])
    times = np.array([float(r["time"]) for r in rows])
    guess = float(np.median(sizes / times))
    return robust_fit(lambda x: sizes / x[0], times, [guess], ("rate",), scale=[guess],
                      lower=[1.0], loss=loss, f_scale=f_scale)
