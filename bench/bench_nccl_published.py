"""NCCL's predicted all-reduce busbw against published nccl-tests figures (issue 13).

Why: the ``nccl`` selector (``select_nccl.py``) and NCCL's schedules (``nccl_sched.py``) claim
to predict what NCCL does; the only outside check is what nccl-tests printed on real machines.
This prints, per system and published size (>= 64 MiB), the published busbw, the predicted busbw
of ``nccl`` (with its selected algorithm / protocol / channels) and of the textbook ``ring``,
and the relative errors.  Then it moves the one free parameter the scenarios carry (the
transport's per-step overhead, assumed 5 us) to show how far the prediction moves with it, and
shows the two NCCL modelling choices one at a time: the NVLink efficiency NCCL itself assumes
(the scenarios' ``nccl_nvlink3`` / ``nccl_nvlink4`` transports) against the copy-engine
``nvlink3`` figure, for NCCL's schedule (reduction fused into the copy) and the textbook ring
(reduction after it).

Published figures (sources in docs/references.md, "NCCL: published nccl-tests figures"):
a maintainer's or user's statement of the peak busbw of 8-GPU single-node all_reduce_perf,
copied as printed; none is a per-size table.  No DGX-1 (V100) figure was found in readable
form, so there is no DGX-1 row.

    /work/venv/bin/python bench/bench_nccl_published.py
"""

from __future__ import annotations

from pathlib import Path

from clustersim.scenario.schema import load_scenario
from clustersim.sim.collective_bench import run_benchmark

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30

#: (scenario, size, published busbw GB/s, source, what NCCL ran)
PUBLISHED = [
    ("nccl_dgxa100", 4 * GIB, 232.54, "NVIDIA/nccl-tests#175 (2023-10-29)", "default"),
    ("nccl_dgxa100", 8 * GIB, 230.0, "NVIDIA/nccl-tests#149 (2023-07-05)", "default"),
    ("nccl_dgxh100", 8 * GIB, 370.0, "NVIDIA/nccl-tests#212 (2024-05-06)", "NCCL_ALGO=RING"),
]
#: the free parameter moved in the sensitivity table
OVERHEADS = ("5 us", "1 us", "0 us")
#: the copy-engine NVLink efficiency the scenarios used before NCCL's own per-link figure
COPY_ENGINE = "platform.link.transport=nvlink3"


def predictions(name: str, sets: tuple[str, ...] = ()) -> dict[tuple[str, float], dict]:
    """{(algorithm, size): row dict} of one shipped scenario's benchmark."""
    scn = load_scenario(ROOT / "scenarios" / f"{name}.yaml", sets)
    return {(r.algorithm, r.size): r.to_dict() for r in run_benchmark(scn)}


def rows() -> list[dict]:
    """One dict per published figure: published and predicted busbw (GB/s), errors."""
    out, cache = [], {}
    for name, size, pub, src, ran in PUBLISHED:
        pred = cache.setdefault(name, predictions(name))
        nccl, ring = pred[("nccl", float(size))], pred[("ring", float(size))]
        out.append({"system": name, "size": size, "published": pub, "source": src, "ran": ran,
                    "nccl": nccl["busbw"] / 1e9, "selected": nccl["selected"],
                    "ring": ring["busbw"] / 1e9,
                    "err_nccl": nccl["busbw"] / 1e9 / pub - 1,
                    "err_ring": ring["busbw"] / 1e9 / pub - 1})
    return out


def main() -> None:
    print("| system | size | published busbw (GB/s) | NCCL ran | predicted `nccl` (GB/s) "
          "| selected | error | predicted `ring` (GB/s) | error | source |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows():
        print(f"| {r['system']} | {r['size'] // GIB} GiB | {r['published']:.1f} | {r['ran']} "
              f"| {r['nccl']:.1f} | {r['selected'].split('→')[-1]} | {r['err_nccl']:+.1%} "
              f"| {r['ring']:.1f} | {r['err_ring']:+.1%} | {r['source']} |")
    print("\nSensitivity to the assumed per-step overhead (network.overhead), busbw GB/s at "
          "the largest published size:")
    print("| system | size | " + " | ".join(f"`nccl` @ {o} | `ring` @ {o}" for o in OVERHEADS)
          + " |")
    print("|---|---|" + "---|---|" * len(OVERHEADS))
    for name in sorted({p[0] for p in PUBLISHED}):
        size = max(p[1] for p in PUBLISHED if p[0] == name)
        cells = []
        for o in OVERHEADS:
            pred = predictions(name, (f"network.overhead={o}",))
            cells += [f"{pred[(a, float(size))]['busbw'] / 1e9:.1f}" for a in ("nccl", "ring")]
        print(f"| {name} | {size // GIB} GiB | " + " | ".join(cells) + " |")
    print("\nThe two NCCL modelling choices one at a time, busbw GB/s at the largest published "
          "size (`nccl`: reduction fused into the copy; textbook `ring`: reduction after it):")
    print("| system | size | published | `nccl`, NCCL's NVLink figure | `ring`, NCCL's NVLink "
          "figure | `nccl`, copy-engine nvlink3 | `ring`, copy-engine nvlink3 |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted({p[0] for p in PUBLISHED}):
        size, pub = max((p[1], p[2]) for p in PUBLISHED if p[0] == name)
        cells = []
        for sets in ((), (COPY_ENGINE,)):
            pred = predictions(name, sets)
            cells += [f"{pred[(a, float(size))]['busbw'] / 1e9:.1f}" for a in ("nccl", "ring")]
        print(f"| {name} | {size // GIB} GiB | {pub:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
