"""Uncertainty bands and sensitivity indices for people (tables) and programs (JSON).

Two kinds of interval appear in one output and must not be confused: the ``[low, high]``
after a number in the scaling tables is the *jitter* interval (5th-95th percentile over
``run.repeats`` seeds of the compute noise, inputs fixed); the bands here are the *input*
uncertainty (the median and 5th-95th percentile over samples of the uncertain inputs, seed
fixed).  Every table and JSON key says which one it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape

from clustersim.report.layout import Col, Omitted, print_hidden, print_table
from clustersim.units import format_duration, format_time

__all__ = ["print_bands", "bands_json", "print_sensitivity", "sensitivity_json",
           "top_drivers", "band_text", "band_title"]

BAND_NOTE = ("input uncertainty: median [5th, 95th percentile] over {n} samples of {k} "
             "(scrambled Sobol, seed {seed})")
#: said only when the scaling tables do show jitter intervals (``run.repeats`` > 1)
JITTER_NOTE = ("; the [..] in the scaling tables above are seed-to-seed jitter intervals, "
               "inputs fixed")


_FMT = {
    "iteration_time": lambda v: f"{v * 1e3:.2f}",
    "throughput": lambda v: f"{v:,.0f}",
    "speedup": lambda v: f"{v:.2f}",
    "efficiency": lambda v: f"{100 * v:.1f}%",
    "comm_share": lambda v: f"{100 * v:.1f}%",
    "time_to_target": format_duration,
    "statistical_efficiency": lambda v: f"{100 * v:.1f}%",
    "goodput": lambda v: f"{v:,.0f}",
}
_HEAD = {"iteration_time": "iter (ms)", "throughput": "samples/s", "speedup": "speedup",
         "efficiency": "efficiency", "comm_share": "comm exposed",
         "time_to_target": "time to target", "statistical_efficiency": "stat. eff.",
         "goodput": "goodput"}
_PRIORITY = {"efficiency": 1, "throughput": 1, "time_to_target": 1, "iteration_time": 2,
             "comm_share": 2, "speedup": 3, "statistical_efficiency": 3, "goodput": 4}


def _duration_band(m: float, lo: float, hi: float) -> str:
    """``median [p05, p95]`` of durations, the ends in the median's unit and decimals."""
    return f"{format_duration(m)} [{format_duration(lo, m)}, {format_duration(hi, m)}]"


def _cell(key: str, b: Any, n: int = 0) -> str:
    """A band's cell; a time to target some samples never reach says how many (QA 16: a
    median with half its samples "never" read as an ordinary figure)."""
    if key == "time_to_target":
        never = getattr(b, "never", 0)
        return (_duration_band(b.median, b.low, b.high)
                + (f" ({never}/{n} never)" if never and n else ""))
    f = _FMT[key]
    return f"{f(b.median)} [{f(b.low)}, {f(b.high)}]"


def _seconds(v: float) -> str:
    return f"{v * 1e3:.3g} ms" if v < 1 else format_duration(v)


def band_text(key: str, band: Mapping[str, float]) -> str:
    """``median [p05, p95]`` of a metric as predict writes it (``1,600``, ``22.3 h``,
    ``80.1%``, ``5.53 s``; was ``1574``, ``8.151e+04`` in the sensitivity tables and charts),
    times with their unit."""
    m = band["median"]
    if key == "time_to_target" and m >= 1:
        return _duration_band(m, band["p05"], band["p95"])
    f = (_seconds if key in ("iteration_time", "time_to_target")
         else _FMT.get(key, lambda v: f"{v:.4g}"))
    return f"{f(m)} [{f(band['p05'])}, {f(band['p95'])}]"


def band_title(key: str, what: str, band: Mapping[str, float]) -> str:
    """``what: median [p05, p95]``, the name without its ``(s)`` when the numbers carry
    their own unit."""
    if key in ("iteration_time", "time_to_target"):
        what = what.removesuffix(" (s)")
    return f"{what}: {band_text(key, band)}"


def print_bands(console: Console, bands: Mapping[str, Any], inputs: Any, n: int, seed: int,
                wide: bool = False, jitter: bool = False) -> None:
    """The uncertain inputs, then one band table per algorithm; ``jitter``: the scaling
    tables printed above carry seed-to-seed intervals too (the note then tells them apart)."""
    dims = inputs.dims
    console.print(f"[bold]uncertain inputs[/bold] ({dims} dimension{'s' if dims != 1 else ''})")
    for f in inputs.fields:
        about = f" — {escape(f.about)}" if f.about else ""
        reach = (" (every algorithm that takes it)" if f.field.startswith("algorithm.")
                 and f.field.split(".")[1] not in ("name", "label") else "")
        console.print(f"  {escape(f.field)}: {escape(f.describe())}{reach}{about}")
    for b in inputs.blocks:
        console.print(f"  calibration ({escape(b.source)}): "
                      f"{escape(', '.join(b.parameters))} — normal, fitted covariance")
    omitted = Omitted()  # the tables fit one by one: the footer says what each left out
    for title, rows in bands.items():
        keys = [k for k in _FMT if any(k in bs for _, bs in rows)]
        cols = [Col("workers", priority=0)] + [Col(_HEAD[k], priority=_PRIORITY[k])
                                               for k in keys]
        cells = [[str(w)] + [_cell(k, bs[k], n) if k in bs else "—" for k in keys]
                 for w, bs in rows]
        print_table(console, f"{title} — input uncertainty", cols, cells, wide=wide,
                    note=False, omitted=omitted)
    print_hidden(console, omitted)
    k = f"{inputs.dims} uncertain input{'s' if inputs.dims != 1 else ''}"
    console.print(BAND_NOTE.format(n=n, k=k, seed=seed)
                  + (JITTER_NOTE if jitter else ""))
    for note in getattr(bands, "notes", ()):  # a nominal outside its own band, and why
        console.print(escape(note["text"]))


def bands_json(bands: Mapping[str, Any], inputs: Any, n: int, seed: int) -> dict[str, Any]:
    """``{"uncertainty": ...}``: the inputs and, per algorithm and point, each metric's
    median and 90 % interval (``null`` for a quantile that is "never")."""
    def num(x: float) -> float | None:
        return None if x == float("inf") else x

    return {
        "kind": "input_uncertainty",
        "interval": "5th-95th percentile over the samples of the uncertain inputs (seed "
                    "fixed); not the seed-to-seed jitter 'interval' of each point",
        "method": "scrambled Sobol (scipy.stats.qmc)", "samples": n, "seed": seed,
        "inputs": [{"field": f.field, "distribution": f.dist, "parameters": list(f.params),
                    "kind": f.kind, "clip": list(f.clip) if f.clip else None,
                    "weights": list(f.weights) if f.weights else None, "about": f.about}
                   for f in inputs.fields]
        + [{"calibration": list(b.parameters), "from": b.source, "distribution": "normal",
            "mean": list(b.value), "covariance": [list(r) for r in b.matrix]}
           for b in inputs.blocks],
        "algorithms": {title: [{"workers": w, **{k: {"median": num(b.median),
                                                     "p05": num(b.low), "p95": num(b.high),
                                                     "never": b.never}
                                                 for k, b in bs.items()}}
                               for w, bs in rows]
                       for title, rows in bands.items()},
        # headline metrics whose nominal lies outside their band (clustersim.uncertainty.nominal)
        "nominal_outside": list(getattr(bands, "notes", ())),
    }


def top_drivers(indices: Mapping[str, Any], metric: str, k: int = 3) -> list[tuple[str, float]]:
    """The ``k`` inputs with the largest total index (Sobol ST, or Morris mu*) of a metric."""
    m = indices[metric]
    pairs = sorted(zip(m["names"], m["rank_by"]), key=lambda t: -t[1])
    return [(n, v) for n, v in pairs[:k]]


def print_sensitivity(console: Console, res: Mapping[str, Any], wide: bool = False) -> None:
    """One table per metric: every input's indices, largest first; then the top drivers."""
    sobol = res["method"] == "sobol"
    cols = [Col("input", justify="left", priority=0)]
    cols += ([Col("S1 first order"), Col("S1 ±95%", priority=2), Col("ST total"),
              Col("ST ±95%", priority=2)] if sobol else
             [Col("mu* (mean |effect|)"), Col("mu* ±95%", priority=2),
              Col("sigma (interaction)")])
    omitted = Omitted()
    for key, m in res["metrics"].items():
        order = sorted(range(len(m["names"])), key=lambda i: -m["rank_by"][i])
        rows = []
        for i in order:
            vals = ([m["S1"][i], m["S1_conf"][i], m["ST"][i], m["ST_conf"][i]] if sobol
                    else [m["mu_star"][i], m["mu_star_conf"][i], m["sigma"][i]])
            rows.append([escape(m["names"][i])] + [f"{v:.3g}" for v in vals])
        title = (f"{res['algorithm']} at {res['workers']:,} workers — "
                 f"{band_title(key, m['what'], m['band'])}")
        print_table(console, title, cols, rows, wide=wide, note=False, omitted=omitted)
    print_hidden(console, omitted)
    what = ("Sobol indices (Saltelli sampling, SALib): S1 = share of the variance an input "
            "explains alone, ST = with its interactions" if sobol else
            "Morris elementary effects (SALib): mu* = mean |change| of the metric, in its "
            "own SI units (s, samples/s, a fraction for efficiency), per unit of the "
            "input's probability: the change from its 0% to its 100% quantile where the "
            "effect is linear in it (measured on a grid at its 12.5/37.5/62.5/87.5% "
            "quantiles), sigma = how much that effect depends on the other inputs")
    band = (f"over the design's {2 * res['base_samples']} independent rows (Saltelli's A "
            f"and B): a sampled estimate of the inputs' 90% interval" if sobol else
            "over those simulations, at the Morris grid's quantiles: a screening range, "
            "not a probability interval")
    console.print(f"{what}; {res['evaluations']} simulations; band = median [5th, 95th "
                  f"percentile] {band}")
    from clustersim.uncertainty.sobol_check import check_text

    for m in res["metrics"].values():  # noise of a small -n: said, values kept raw
        if m.get("too_few_samples"):
            console.print(escape(check_text(m["what"], m["too_few_samples"],
                                            res["base_samples"])))
    for metric in res["metrics"]:
        ranked = [(n, v) for n, v in top_drivers(res["metrics"], metric) if v > 0]
        tops = ", ".join(f"{escape(n)} ({v:.2g})" if sobol else
                         f"{escape(n)} ({_effect(metric, v)})" for n, v in ranked)
        if not ranked:  # e.g. efficiency of a one-point sweep: 1 (an input at 0 moves nothing)
            tops = "none: no input moves it"
        maybe = (f" (tentative: -n {res['base_samples']:,} is too small)"
                 if res["metrics"][metric].get("too_few_samples") else "")
        console.print(f"top drivers of {res['metrics'][metric]['what']}{maybe}: {tops}")


def _effect(metric: str, v: float) -> str:
    """A Morris mu* in the metric's own terms (``28.3 min``, ``1,024 samples/s``, ``4.2
    points``) - it is in SI units, and ``1.7e+03`` for a time to target read as noise."""
    if metric == "time_to_target":
        return format_duration(v)
    if metric == "iteration_time":
        return format_time(v)
    if metric == "throughput":
        return f"{v:,.3g} samples/s" if v < 100 else f"{v:,.0f} samples/s"
    if metric in ("efficiency", "comm_share"):
        return f"{100 * v:.3g} points"
    return f"{v:.3g}"


def sensitivity_json(res: Mapping[str, Any]) -> dict[str, Any]:
    """The result as JSON-ready data (the ``rank_by`` helper column left out)."""
    out = dict(res)
    out["metrics"] = {k: {kk: vv for kk, vv in m.items() if kk != "rank_by"}
                      for k, m in res["metrics"].items()}
    return out
