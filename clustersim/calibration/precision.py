"""Compute efficiency by arithmetic precision, from GEMM rows of ``realrun microbench``.

A GPU's tensor cores run tf32, bf16 and fp16 GEMMs at 7-15 times its fp32 rate, so one
efficiency per device cannot describe training in another precision.  Per precision this fits
``time = overhead + flops / rate`` to the GEMM rows (``--gemm-precisions``), by linear least
squares in ``(overhead, 1 / rate)`` weighted by ``1 / time`` so that every shape counts by its
relative error; ``efficiency`` is ``rate`` over the device's datasheet peak of that precision
(:class:`clustersim.catalog.DeviceSpec`: ``peak``, ``peak_tf32``, ``peak_bf16``,
``peak_fp16``).  Why not the roofline fit of :mod:`.computefit`: that one fits per kernel
*class* in the precision the training proxy runs (fp32); this table answers the what-if
"the same GEMMs in bf16" and is what the catalog's ``measured`` line quotes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["PEAK_FIELD", "precision_table"]

#: the ``dtype`` a GEMM row records -> the DeviceSpec field of its datasheet peak
PEAK_FIELD = {"float32": "peak", "tf32": "peak_tf32", "bfloat16": "peak_bf16",
              "float16": "peak_fp16"}


def precision_table(rows: Iterable[Mapping[str, Any]], device: Any = None
                    ) -> dict[str, dict[str, float]]:
    """Per GEMM dtype: ``rate`` (FLOP/s), ``overhead`` (s), ``best`` (highest measured
    FLOP/s), ``shapes``, ``rms_rel`` (of the fit) and, with ``device``, ``efficiency``."""
    by: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        if r.get("bench") == "gemm" and r.get("time", 0) > 0:
            by.setdefault(str(r.get("dtype", "float32")), []).append(
                (float(r["flops"]), float(r["time"])))
    out: dict[str, dict[str, float]] = {}
    for dtype, pts in by.items():
        f = np.array([p[0] for p in pts])
        t = np.array([p[1] for p in pts])
        a = np.column_stack([np.ones_like(f), f]) / t[:, None]
        (over, inv_rate), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        if inv_rate <= 0:  # degenerate (one shape, or noise): the best rate, no overhead
            over, inv_rate = 0.0, float(np.min(t / f))
        over = max(float(over), 0.0)
        model = over + f * inv_rate
        row = {"rate": 1.0 / float(inv_rate), "overhead": over, "best": float(np.max(f / t)),
               "shapes": float(len(pts)),
               "rms_rel": float(np.sqrt(np.mean(((model - t) / t) ** 2)))}
        peak = getattr(device, PEAK_FIELD.get(dtype, ""), None) if device is not None else None
        if peak:
            row["efficiency"] = row["rate"] / float(peak)
        out[dtype] = row
    return out
