"""Adaptive (UGAL) routing at flow fidelity on a 1,024-host dragonfly (prints figures; not a
test).

Every round, each host sends ``--size`` to the host ``shift`` groups further on (a group-to-
group permutation: minimal routing funnels a whole group through one global link, the case
Valiant and UGAL exist for), the shift changing per round; rounds run back to back.  Figures
per policy: simulated time, CPU time of this process (the machine may be shared), flow
events per second (a flow's start and its finish
are two events) and, for UGAL, the share of flows routed non-minimally.  The static policies
run on the plain :class:`~clustersim.network.flow.FlowNetwork`, UGAL on
:class:`~clustersim.network.adaptive.AdaptiveFlowNetwork` (routes chosen from the per-link
flow counts as each flow starts), so the difference in events/s is the price of adaptivity.

    /work/venv/bin/python bench/bench_adaptive.py [--rounds 8] [--size 1MiB]
"""

from __future__ import annotations

import argparse
import time

import simpy

from clustersim.catalog import builtin_catalog
from clustersim.network.flow import FlowNetwork
from clustersim.platform import dragonfly
from clustersim.platform.policies import RoutingSpec
from clustersim.units import format_time, parse_size


def run(plat, rounds: int, size: float, hosts_per_group: int, groups: int
        ) -> tuple[float, float, int]:
    """(simulated time, CPU seconds, flows) of ``rounds`` group-shift permutations."""
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, plat)
    n = plat.num_devices
    adaptive = getattr(net, "transfer_pairs", None)

    def body():
        for k in range(rounds):
            shift = (1 + k % (groups - 1)) * hosts_per_group + k
            pairs = [(i, (i + shift) % n) for i in range(n)]
            if adaptive is not None:
                yield adaptive(pairs, size)
            else:
                yield net.transfer_all([plat.route(a, b) for a, b in pairs], size)

    t0 = time.process_time()
    env.process(body())
    env.run()
    return env.now, time.process_time() - t0, net.flows_finished


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--size", default="1MiB")
    args = ap.parse_args()
    size = parse_size(args.size)
    cat = builtin_catalog()
    groups, routers, hosts = 16, 8, 8  # 1,024 hosts, 2 global links per router
    base = dragonfly(groups, routers, hosts, cat.device("knl7250"), cat.link("aries"),
                     cat.link("aries_local"), cat.link("aries_global"))
    print(f"{base.describe()}; {args.rounds} rounds of a group-shift permutation, "
          f"{args.size} per flow")
    print(f"{'policy':<10}{'simulated':>12}{'CPU s':>9}{'flows':>8}{'events/s':>11}"
          f"{'non-minimal':>13}")
    for policy in ("minimal", "valiant", "ugal"):
        plat = base.with_routing(RoutingSpec(policy))
        for a in range(plat.num_devices):  # warm the route caches: routing is timed elsewhere
            plat.route(a, (a + hosts * routers) % plat.num_devices)
        sim_t, wall, flows = run(plat, args.rounds, size, hosts * routers, groups)
        share = ""
        if plat.adaptive:
            m, v = plat._ugal.choices
            share = f"{v / max(m + v, 1):.0%}"
        print(f"{policy:<10}{format_time(sim_t):>12}{wall:>9.2f}{flows:>8}"
              f"{2 * flows / wall:>11,.0f}{share:>13}")


if __name__ == "__main__":
    main()
