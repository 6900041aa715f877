"""Small-message latency, simulated vs published point-to-point measurements (issue 13).

Why: a link class's ``latency`` is a hop's hardware delay and a transport's ``overhead`` is
what an end-to-end measurement adds on top of the measured path's hops (docs/fabrics.md,
"Latency: hops and overheads").  This script rebuilds each measured path as an explicit
platform, sends one message of each published size through the flow model, and prints the
simulated one-way time beside the published one.  The anchor row of each path (the size its
transport's overhead was derived from) must agree by construction; the other sizes are
predictions - the flow model charges an RDMA payload above the inline size one PCIe read
(the transport's ``dma_read``) but not the read's growth with the payload's size, which the
published mid sizes show (docs/fabrics.md, "The DMA read of an RDMA payload").

Run: python bench/bench_latency_published.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import simpy  # noqa: E402

from clustersim.network.flow import FlowNetwork  # noqa: E402
from clustersim.scenario.schema import parse_scenario  # noqa: E402

#: (label, path as (node kind/device, link class) chain, [(bytes, published us)], anchor bytes
#: (None: every size is a prediction, the source says why), source)
PATHS = [
    ("EDR back to back (ib_send_lat, RC)",
     ("xeon6248", ["pcie3x16", "ib_edr", "pcie3x16"], "xeon6248"),
     [(32, 0.82), (1024, 1.58), (4096, 2.26), (32768, 4.57)], 32,
     "D. Potter, RWTH Aachen master's thesis (2018), table mtu_performance: ConnectX-4 "
     "MT27700 back to back, 0.5 m copper; middle of the MTU columns"),
    ("A100 GPU0->GPU1 through NVSwitch (p2pBandwidthLatencyTest, P2P writes)",
     ("a100", ["nvlink3", "nvlink3"], "a100"),
     [(4, 3.30)], 4,
     "github.com/LLMServe/DistServe issue #3 (2024-06-11): P2P=Enabled Latency GPU0->GPU1"),
    ("V100 GPU0->GPU1, directly linked (p2pBandwidthLatencyTest, P2P writes)",
     ("v100", ["nvlink2"], "v100"),
     [(4, 1.87)], 4,
     "github.com/aistabci/abci2.0benchmark pt2pt/intra_vnode/intra_vnode.out (2021, CUDA "
     "11.2.2 samples, 4x V100-SXM2-16GB): P2P=Enabled Latency (P2P Writes) GPU0->GPU1"),
    ("EDR 2 MiB (ib_write_lat, RC, 4 KiB MTU; path not stated, drawn back to back)",
     ("xeon6248", ["pcie3x16", "ib_edr", "pcie3x16"], "xeon6248"),
     [(2097152, 176.0)], None,
     "forums.developer.nvidia.com/t/273376: 'The latency of sending 2097152B in "
     "ib_write_lat test is ~176us', EDR 4x, mlx5 HCA; no anchor: the ib_verbs efficiency "
     "is the same poster's ib_write_bw ceiling (96.6 Gb/s), so this row checks that the "
     "bandwidth and latency figures agree"),
    ("RoCE 100GbE back to back (ib_send_lat, RC, 8 B)",
     ("xeon6248", ["pcie3x16", {"like": "eth100g", "transport": "roce"}, "pcie3x16"],
      "xeon6248"),
     [(8, 0.92)], 8,
     "github.com/morrismeyer/warpforge holmes-lab/mark1/mellanox-perf/CONNECTX5.md (commit "
     "848da079, test date 2026-01-22): two ConnectX-5 EN MCX515A-CCAT (MT27800, fw "
     "16.29.2002) on a direct QSFP28 cable, PCIe 3.0 x8, perftest 39.0: ib_send_lat "
     "--size=8 t_typical 0.92 us (ib_write_lat 0.99 us); Ryzen 7000 hosts, drawn as xeon6248 "
     "(the host device does not enter a message's latency)"),
]


def path_scenario(first: str, links: list[str], last: str) -> dict:
    """An explicit platform: ``first`` -link- sw1 -link- ... -link- ``last``."""
    nodes = [{"name": "a", "kind": "device", "device": first}]
    names = ["a"] + [f"s{i}" for i in range(1, len(links))] + ["b"]
    nodes += [{"name": n, "kind": "switch"} for n in names[1:-1]]
    nodes.append({"name": "b", "kind": "device", "device": last})
    return {"platform": {"topology": "explicit", "nodes": nodes,
                         "links": [{"between": [names[i], names[i + 1]], "link": lk}
                                   for i, lk in enumerate(links)]},
            "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [2],
                          "sizes": ["1 MB"]}}


def one_way(raw: dict, nbytes: float) -> float:
    """Simulated time (s) of one ``nbytes`` message from device 0 to device 1."""
    scn = parse_scenario(raw)
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, scn.platform, scn.network)
    env.run(net.transfer(scn.platform.route(0, 1), nbytes))
    return float(env.now)


def rows() -> list[tuple[str, int, float, float, bool]]:
    """(path, bytes, published us, simulated us, is the anchor) for every published size."""
    out = []
    for label, (first, links, last), sizes, anchor, _src in PATHS:
        raw = path_scenario(first, links, last)
        for n, us in sizes:
            out.append((label, n, us, one_way(raw, n) * 1e6, n == anchor))
    return out


def main() -> None:
    print(f"{'path':<72} {'bytes':>6} {'published':>10} {'simulated':>10} {'ratio':>6}")
    for label, n, pub, sim, anchor in rows():
        tag = "  (anchor)" if anchor else ""
        print(f"{label:<72} {n:>6} {pub:>8.2f}us {sim:>8.2f}us {sim / pub:>6.2f}{tag}")
    print()
    for label, *_rest, src in PATHS:
        print(f"{label}: {src}")


if __name__ == "__main__":
    main()
