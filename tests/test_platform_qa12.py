"""QA 12 F5 and F7: ``clustersim routes`` costs a step as the simulator does (the links'
transports included), and a catalog override of a link class reaches every link of that class
(the node links a platform file leaves to their defaults included)."""

from __future__ import annotations

import collections
import json

import pytest

from clustersim.cli import main
from clustersim.shipped import scenario_path

MIB = 2.0**20

#: QA 12's fr_bench.yaml: one ring all-reduce step of 64 ranks on 25 GbE with TCP (efficiency
#: 0.9, catalog transport tcp_25g); each rank sends 1 MiB, one flow per link
BENCH = """\
name: fr_bench
platform: {file: supercloud_v100_eth25}
network: {overhead: 5 us}
benchmark: {op: allreduce, algorithms: [ring], ranks: [64], sizes: [64 MiB]}
run: {seed: 0, fidelity: flow}
"""


def _routes(tmp_path, *extra: str) -> dict:
    f = tmp_path / "fr_bench.yaml"
    f.write_text(BENCH)
    js = tmp_path / "routes.json"
    assert main(["routes", str(f), "-q", "--json", str(js), *extra]) == 0
    return json.loads(js.read_text())


def test_routes_step_time_charges_the_transport(tmp_path):
    """The closed form: the node-crossing transfer drains 1 MiB through the 25 GbE NIC at
    3.125 GB/s x 0.9 (tcp_25g), after the 5 us overhead and its route's hop latencies.  The
    old network left the transport out: 342.3 us instead of 379.6 us."""
    from clustersim.scenario.schema import load_scenario

    res = _routes(tmp_path)
    plat = load_scenario(str(tmp_path / "fr_bench.yaml")).platform
    lat = dict(zip(plat.link_names, map(float, plat.latency)))
    kinds = dict(zip(plat.link_names, plat.link_kind))
    crossing = [t for t in res["transfers"] if any(kinds[x] == "eth25g" for x in t["links"])]
    assert crossing and res["max_flows"] == 1
    hops = max(sum(lat[x] for x in t["links"]) for t in crossing)
    expected = MIB / (3.125e9 * 0.9) + 5e-6 + hops
    assert res["step_time"] == pytest.approx(expected, rel=1e-9)
    assert res["step_time"] == pytest.approx(379.63e-6, rel=1e-4)


def test_routes_step_time_equals_the_simulators_step(tmp_path):
    """``routes --step 2`` (the all-gather pattern: no reduction) against the same step in
    the simulator's own flow-level run of the schedule (``simulate_schedule``, the network
    :meth:`FlowNetwork.for_platform` builds); and :func:`analyse` with a step overhead (a
    calibration profile's ``network.step_overhead``), which both charge once per step."""
    from dataclasses import replace

    from clustersim.collectives import build_schedule
    from clustersim.commands.routes import analyse
    from clustersim.network.flowsim import simulate_schedule
    from clustersim.scenario.schema import load_scenario

    res = _routes(tmp_path, "--step", "2")
    scn = load_scenario(str(tmp_path / "fr_bench.yaml"))
    plat = scn.platform
    sched = build_schedule("allreduce", "ring", 64, 64 * MIB,
                           hosts=[plat.host(d) for d in range(64)])
    assert res["step"] == 2 and sched.steps[1].repeat == 63
    cost = simulate_schedule(sched, plat, params=scn.network)
    assert res["step_time"] == pytest.approx(cost.step_times[1], rel=1e-9)
    params = replace(scn.network, step_overhead=3e-6)
    cost = simulate_schedule(sched, plat, params=params)
    got = analyse(plat, sched.steps[1], params)["step_time"]
    assert got == pytest.approx(cost.step_times[1], rel=1e-9)
    assert got == pytest.approx(res["step_time"] + 3e-6, rel=1e-9)
    # an adaptive policy (UGAL): for_platform hands out the adaptive network, the flows
    # take the routes routes shows, and the step costs what the simulator's step costs
    f = tmp_path / "df.yaml"
    f.write_text("name: df\n"
                 "platform: {file: cori_knl, groups: 5, routers_per_group: 4, "
                 "hosts_per_router: 2, routing: ugal}\n"
                 "network: {overhead: 0 us, efficiency: 1.0}\n"
                 "benchmark: {op: alltoall, algorithms: [pairwise], ranks: [40], "
                 "sizes: [64 MiB]}\n")
    js = tmp_path / "ugal.json"
    assert main(["routes", str(f), "-q", "--step", "9", "--json", str(js)]) == 0
    ugal = json.loads(js.read_text())
    assert ugal["routing"]["policy"] == "ugal" and ugal["max_flows"] == 5  # QA 12: 7 minimal
    scn = load_scenario(str(f))
    sched = build_schedule("alltoall", "pairwise", 40, 64 * MIB,
                           hosts=[scn.platform.host(d) for d in range(40)])
    cost = simulate_schedule(sched, scn.platform, params=scn.network)
    assert ugal["step_time"] == pytest.approx(cost.step_times[8], rel=1e-9)


@pytest.mark.parametrize("scenario", ["fabrics_resnet50", "fabrics_vgg16"])
def test_catalog_override_reaches_every_link_of_the_class(scenario):
    """Every ``pcie3x16`` link of every variant - the GPUs' (named in the platform file) and
    the NICs' (left to the node's default) - carries the overridden bandwidth; the old build
    kept the NICs' at the built-in 15.75 GB/s."""
    from clustersim.scenario.schema import load_scenario

    scn = load_scenario(str(scenario_path(scenario)),
                        ["catalog.links.pcie3x16.bandwidth=63 GB/s"])
    variants = [(lab, v.platform) for lab, v in scn.variants] or [("main", scn.platform)]
    assert len(variants) == 3
    for lab, plat in variants:
        caps = collections.Counter(float(c) for c, k in zip(plat.capacity, plat.link_kind)
                                   if k == "pcie3x16")
        assert caps and set(caps) == {63e9}, (lab, caps)
        nics = [i for i, name in enumerate(plat.link_names) if ".nic" in name]
        assert nics, lab
        assert all(float(plat.capacity[i]) == 63e9 for i in nics
                   if plat.link_kind[i] == "pcie3x16"), lab


def test_default_links_follow_a_platform_catalog():
    """A platform description's own ``catalog:`` reaches its nodes' defaulted links too
    (``nvlink``, ``intersocket``, ``pcie`` and ``nic_link`` all left out)."""
    from clustersim.catalog import builtin_catalog
    from clustersim.platform.describe import build_platform

    raw = {"topology": "star", "hosts": 2, "device": "v100", "link": "eth25g",
           "node": {"devices": 4, "layout": "nvlink_mesh", "nics": 1, "sockets": 2},
           "catalog": {"links": {"nvlink2": {"like": "nvlink2", "bandwidth": "1 GB/s"},
                                 "qpi": {"like": "qpi", "bandwidth": "2 GB/s"},
                                 "pcie3x16": {"like": "pcie3x16", "bandwidth": "3 GB/s"}}}}
    plat = build_platform(raw, builtin_catalog())
    caps = collections.defaultdict(set)
    for c, k in zip(plat.capacity, plat.link_kind):
        caps[k].add(float(c))
    assert caps["nvlink2"] == {1e9} and caps["qpi"] == {2e9} and caps["pcie3x16"] == {3e9}


def test_an_adaptive_network_charges_the_links_transports_too() -> None:
    """The simulator's UGAL network (``AdaptiveFlowNetwork``) had been built without the
    links' transports, so a ugal run on a platform with TCP or PCIe transports drained those
    links by their class's table instead of the transport's; it now keys every link as
    :meth:`FlowNetwork.for_platform` does for any other policy."""
    import simpy

    from clustersim.network.adaptive import AdaptiveFlowNetwork
    from clustersim.network.flow import FlowNetwork
    from clustersim.scenario.schema import load_scenario

    scn = load_scenario("scenarios/knl_4253.yaml",
                        ["platform={file: cori_knl_cores, routing: ugal}"])
    plat, params = scn.platform, scn.network
    assert plat.adaptive
    keys = params.link_keys(plat.link_kind, plat.link_transport)
    assert keys != tuple(plat.link_kind)  # the transports do change some links' keys
    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, plat, params)
    assert type(net) is AdaptiveFlowNetwork
    assert net._kinds == keys  # noqa: SLF001
