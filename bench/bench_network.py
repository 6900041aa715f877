"""Network engine speed, memory and fidelity (prints figures; not a test).

Targets (network brief):
  * ring allreduce, 64 MiB, 256 ranks of a fat-tree, flow fidelity: <= 3 s
  * the same on 4,253 ranks at analytic fidelity: <= 0.2 s (platform build reported apart)
  * flow events (starts + finishes) per second of the engine: >= 50,000/s

Wall times are the minimum over ``--repeat`` runs and CPU times (``time.process_time``) are
printed beside them: this machine is shared, and the minimum / CPU time are the least noisy
estimates of the cost itself.  Peak memory is measured in a separate run under tracemalloc
(it slows Python down, so it is never timed).  ``--fidelity`` adds the flow-vs-analytic table
that docs/fidelity.md quotes.

    /work/venv/bin/python bench/bench_network.py [--repeat 3] [--fidelity]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np
import simpy

from clustersim.catalog import builtin_catalog
from clustersim.collectives import build_schedule, list_algorithms
from clustersim.network.analytic import cost_schedule
from clustersim.network.fidelity import analytic_is_exact, choose_fidelity
from clustersim.network.flow import FlowNetwork
from clustersim.network.flowsim import schedule_process, simulate_schedule
from clustersim.platform.builders import dragonfly, fat_tree, leaf_spine, ring, star

MIB = 2**20
CAT = builtin_catalog()
DEV = CAT.device("v100")
IB = CAT.link("ib_edr")


def timed(fn, repeat: int):
    """(best wall s, best cpu s, last result)."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall = min(wall, time.perf_counter() - w)
        cpu = min(cpu, time.process_time() - c)
    return wall, cpu, out


def peak_mib(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


def smallest_fat_tree_k(hosts: int) -> int:
    k = 2
    while k**3 // 4 < hosts:
        k += 2
    return k


def run_flow(sched, plat) -> tuple[FlowNetwork, object]:
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, plat)
    proc = env.process(schedule_process(env, net, sched, plat))
    env.run()
    return net, proc.value


def bench_ring_flow(repeat: int) -> None:
    p, n = 256, 64 * MIB
    k = smallest_fat_tree_k(p)
    plat = fat_tree(k, DEV, IB, hosts=p)
    sched = build_schedule("allreduce", "ring", p, n)
    wall = cpu = float("inf")
    for _ in range(repeat):
        fresh = fat_tree(k, DEV, IB, hosts=p)  # routes are resolved inside the timed run
        w, c = time.perf_counter(), time.process_time()
        net, cost = run_flow(sched, fresh)
        wall = min(wall, time.perf_counter() - w)
        cpu = min(cpu, time.process_time() - c)
    events = net.flows_started + net.flows_finished
    mem = peak_mib(lambda: run_flow(sched, plat))
    print(f"ring allreduce 64 MiB, {p} ranks, fat-tree k={k}, flow fidelity")
    print(f"  transfers {sched.num_transfers():,}  predicted {cost.time * 1e3:.3f} ms")
    print(f"  wall {wall:.3f} s  cpu {cpu:.3f} s  (target <= 3 s)  peak traced memory "
          f"{mem:.1f} MiB")
    print(f"  engine: {events:,} flow events, {events / wall:,.0f}/s wall, "
          f"{events / cpu:,.0f}/s cpu; {net.recomputations} max-min refills")


def bench_ring_analytic(repeat: int) -> None:
    p, n = 4253, 64 * MIB
    k = smallest_fat_tree_k(p)
    t = time.perf_counter()
    plat = fat_tree(k, DEV, IB, hosts=p)
    build = time.perf_counter() - t
    t = time.perf_counter()
    sched = build_schedule("allreduce", "ring", p, n)
    sbuild = time.perf_counter() - t
    # cold: routes resolved during costing (a fresh platform each time)
    cold = float("inf")
    for _ in range(repeat):
        fresh = fat_tree(k, DEV, IB, hosts=p)
        t = time.perf_counter()
        cost = cost_schedule(sched, fresh)
        cold = min(cold, time.perf_counter() - t)
    warm, _, cost = timed(lambda: cost_schedule(sched, plat), repeat)
    print(f"ring allreduce 64 MiB, {p} ranks, fat-tree k={k}, analytic fidelity")
    print(f"  platform build {build:.3f} s, schedule build {sbuild * 1e3:.1f} ms")
    print(f"  costing {cold:.3f} s with route resolution, {warm:.3f} s with routes cached "
          f"(target <= 0.2 s); predicted {cost.time * 1e3:.3f} ms")


def _p2p(plat, hosts: int, msgs: int, seed: int = 0):
    """Every host sends ``msgs`` messages (log-uniform 4 KiB..4 MiB) to random peers, each
    after an exponential gap (mean 20 us): independent point-to-point traffic."""
    rng = np.random.default_rng(seed)
    peers = rng.integers(1, hosts, size=(hosts, msgs))
    sizes = np.exp(rng.uniform(np.log(4096), np.log(4 * MIB), size=(hosts, msgs)))
    gaps = rng.exponential(20e-6, size=(hosts, msgs))
    routes = [[plat.route(h, (h + int(peers[h, m])) % hosts) for m in range(msgs)]
              for h in range(hosts)]

    def run():
        env = simpy.Environment()
        net = FlowNetwork.for_platform(env, plat)

        def host(h):
            for m in range(msgs):
                yield env.timeout(gaps[h, m])
                yield net.transfer(routes[h][m], sizes[h, m])

        for h in range(hosts):
            env.process(host(h))
        env.run()
        return net

    return run


def _concurrent(plat, p: int, count: int):
    """``count`` ring allreduces of different sizes at once on the same ranks."""
    scheds = [build_schedule("allreduce", "ring", p, (8 + i) * MIB) for i in range(count)]

    def run():
        env = simpy.Environment()
        net = FlowNetwork.for_platform(env, plat)
        for s in scheds:
            env.process(schedule_process(env, net, s, plat))
        env.run()
        return net

    return run


def bench_events(repeat: int) -> None:
    print("flow events per second (starts + finishes; target >= 50,000/s)")
    cases = [
        ("4 concurrent ring allreduces, 64 ranks, fat-tree k=8",
         _concurrent(fat_tree(8, DEV, IB, hosts=64), 64, 4)),
        ("2 concurrent ring allreduces, 256 ranks, fat-tree k=12",
         _concurrent(fat_tree(12, DEV, IB, hosts=256), 256, 2)),
        ("random point-to-point, 256 hosts, crossbar",
         _p2p(star(256, DEV, IB), 256, 100)),
        ("random point-to-point, 256 hosts, fat-tree k=12 (one big contention group)",
         _p2p(fat_tree(12, DEV, IB, hosts=256), 256, 10)),
    ]
    for label, run in cases:
        wall, cpu, net = timed(run, repeat)
        ev = net.flows_started + net.flows_finished
        print(f"  {label}: {ev:,} events, {ev / wall:,.0f}/s wall, {ev / cpu:,.0f}/s cpu, "
              f"{net.recomputations:,} refills")


def bench_auto_threshold() -> None:
    """Flow cost of non-exact schedules, to place ``auto``'s thresholds."""
    print("flow cost of schedules the analytic model cannot do exactly (auto thresholds)")
    cases = [
        ("double binary tree allreduce, 64 ranks, ring topology", ring(64, DEV, IB), 64,
         "allreduce", "double_binary_tree"),
        ("double binary tree allreduce, 64 ranks, fat-tree k=8",
         fat_tree(8, DEV, IB, hosts=64), 64, "allreduce", "double_binary_tree"),
        ("alltoall-sum-allgather allreduce, 32 ranks, ring topology", ring(32, DEV, IB), 32,
         "allreduce", "asa"),
    ]
    for label, plat, p, op, alg in cases:
        sched = build_schedule(op, alg, p, 16 * MIB)
        auto = choose_fidelity(sched, "auto", plat)
        _, cpu, _ = timed(lambda s=sched, pl=plat: simulate_schedule(s, pl), 1)
        n = sched.num_transfers()
        print(f"  {label}: {n:,} transfers, {cpu:.2f} s cpu ({cpu / n * 1e6:.0f} us/transfer), "
              f"auto -> {auto}")


def bench_fidelity() -> None:
    """Flow vs analytic over algorithms, sizes, topologies and placements."""
    plats = {
        "crossbar": lambda p: star(p, DEV, IB),
        "ring": lambda p: ring(p, DEV, IB),
        "fat_tree": lambda p: fat_tree(8, DEV, IB, hosts=max(p, 16)),
        "leaf_spine_4to1": lambda p: leaf_spine(8, 2, 8, DEV, IB, oversubscription=4.0),
        "dragonfly": lambda p: dragonfly(9, 4, 2, DEV, IB, CAT.link("aries_local"),
                                         CAT.link("aries_global")),
    }
    rng = np.random.default_rng(0)
    print("flow vs analytic: (analytic - flow) / flow over all algorithms, linear and random "
          "placement; 'exact' = cases the exactness rule covers")
    print(f"  {'topology':16s} {'ranks':>5s} {'size':>8s} {'cases':>5s} {'exact':>5s} "
          f"{'max diff':>9s} {'median':>8s}  worst case")
    for name, mk in plats.items():
        for p in (16, 64):
            plat = mk(p)
            placements = [list(range(p)),
                          [int(x) for x in rng.permutation(plat.num_devices)[:p]]]
            for n in (64 * 2**10, 16 * MIB):
                diffs = []
                exact = 0
                for op, algs in list_algorithms().items():
                    for alg in algs:
                        if alg == "user_tree":
                            continue
                        for pl in placements:
                            sched = build_schedule(op, alg, p, n,
                                                   hosts=[plat.host(d) for d in pl])
                            ana = cost_schedule(sched, plat, pl)
                            if analytic_is_exact(sched, plat, pl):
                                exact += 1
                                diffs.append((0.0, op, alg))
                                continue
                            if choose_fidelity(sched, "auto", plat, pl) != "flow":
                                continue  # too big for a table run; see bench_auto_threshold
                            flow = simulate_schedule(sched, plat, pl)
                            diffs.append(((ana.time - flow.time) / flow.time, op, alg))
                diffs.sort()
                worst = diffs[-1]
                print(f"  {name:16s} {p:5d} {n / MIB:7.3g}M {len(diffs):5d} {exact:5d} "
                      f"{worst[0]:+9.4f} {diffs[len(diffs) // 2][0]:+8.4f}  "
                      f"{worst[1]}/{worst[2]}  (min {diffs[0][0]:+.2e})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fidelity", action="store_true", help="also print the fidelity table")
    args = ap.parse_args()
    bench_ring_flow(args.repeat)
    bench_ring_analytic(args.repeat)
    bench_events(args.repeat)
    bench_auto_threshold()
    if args.fidelity:
        bench_fidelity()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS {rss:.0f} MiB (everything above, 4,253-rank fat-tree included)")


if __name__ == "__main__":
    main()
