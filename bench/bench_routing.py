"""Platform build and route-resolution speed (prints figures; not a test).

Targets (from the platform brief): resolving the routes of a ring on 4,253 ranks of a fat-tree
or dragonfly well under 0.1 s; a 256-rank fat-tree in milliseconds.  Every figure is the
minimum over ``--repeat`` fresh platforms (route caches start empty each time) of the CPU time
of this process (``time.process_time``): the machine is shared by other jobs, and wall time on
two oversubscribed cores measures them more than us.  ``--wall`` reports wall time instead.

    /work/venv/bin/python bench/bench_routing.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from clustersim.catalog import builtin_catalog
from clustersim.platform import Platform, dragonfly, fat_tree, torus
from clustersim.platform.node import NodeSpec


def ring_pairs(p: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % p) for i in range(p)]


def doubling_pairs(p: int) -> list[tuple[int, int]]:
    """Every partner of recursive doubling (log2 p steps of i <-> i xor 2^j)."""
    out = []
    j = 1
    while j < p:
        out += [(i, i ^ j) for i in range(p) if i ^ j < p]
        j <<= 1
    return out


def measure(make: Callable[[], Platform], patterns: dict[str, Callable[[int], list]],
            repeat: int, clock: Callable[[], float]) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(repeat):
        t0 = clock()
        plat = make()
        best["build"] = min(best.get("build", 1e9), clock() - t0)
        for name, pat in patterns.items():
            pairs = pat(plat.num_devices)
            t0 = clock()
            for s, d in pairs:
                plat.route(s, d)
            dt = clock() - t0
            best[name] = min(best.get(name, 1e9), dt)
            best[name + "_n"] = len(pairs)
        t0 = clock()
        for s, d in ring_pairs(plat.num_devices):
            plat.route(s, d)
        best["cached"] = min(best.get("cached", 1e9), clock() - t0)
    best["devices"] = plat.num_devices
    best["core"] = plat.routing_core_size
    best["searches"] = plat._router.searches
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--wall", action="store_true", help="wall-clock instead of CPU time")
    args = ap.parse_args()
    clock = time.perf_counter if args.wall else time.process_time
    cat = builtin_catalog()
    k80, knl, v100 = cat.device("k80"), cat.device("knl7250"), cat.device("v100")
    eth, aries = cat.link("eth10g"), cat.link("aries")
    loc, glob = cat.link("aries_local"), cat.link("aries_global")
    pats = {"ring": ring_pairs, "doubling": doubling_pairs}
    cases: list[tuple[str, Callable[[], Platform]]] = [
        ("fat_tree k=16, 256 hosts", lambda: fat_tree(16, k80, eth, hosts=256)),
        ("fat_tree k=26, 4,253 hosts", lambda: fat_tree(26, k80, eth, hosts=4253)),
        ("dragonfly 60x12 routers x6 hosts (4,320)",
         lambda: dragonfly(60, 12, 6, knl, aries, loc, glob)),
        ("torus 16x16x17 (4,352)", lambda: torus((16, 16, 17), knl, aries)),
        ("fat_tree k=8, 128 DGX-1 (1,024 GPUs)",
         lambda: fat_tree(8, v100, cat.link("ib_edr"),
                          node=NodeSpec(devices=8, layout="hybrid_cube_mesh", nics=4,
                                        gpudirect=True))),
    ]
    print(f"{'platform':58s} {'devices':>8s} {'core':>6s} {'build s':>8s} "
          f"{'ring ms':>8s} {'doubling ms (routes)':>22s} {'cached ring ms':>15s} "
          f"{'BFS':>5s}")
    for label, make in cases:
        r = measure(make, pats, args.repeat, clock)
        print(f"{label:58s} {r['devices']:8d} {r['core']:6d} {r['build']:8.3f} "
              f"{r['ring'] * 1e3:8.1f} {r['doubling'] * 1e3:11.1f} ({r['doubling_n']:7d}) "
              f"{r['cached'] * 1e3:15.2f} {r['searches']:5d}")


if __name__ == "__main__":
    main()
