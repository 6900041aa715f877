"""Reproduction targets: the paper's headline figures from the KNL scenarios (You, Buluc,
Demmel, SC17).

Targets (docs/references.md; tolerances are the issue's): Sync EASGD's weak-scaling
efficiency on 4,253 KNL cores is 91.5% +- 3 points; original EASGD spends 87% of its time
communicating and Sync EASGD 14% (+- 5 points each); Sync EASGD is 5.3x (+- 20%) faster.
These are reproductions, not predictions: the paper fixes the core count only, and the
scenarios' model (GoogLeNet, 8 images per core, tau = 1, 2% compute noise), platform
(topologies/cori_knl_cores.yaml) and, for the 87%/14%/5.3x, the scale (6 nodes) are our
choices, under which the figures land where the paper's are; how far those choices move them
is printed under predict's table and in docs/algorithms.md.  So the tests pin what the
simulator makes of those choices (a regression), not an independent agreement.  Communication share is counted as the paper's
time breakdown does: everything a worker does besides computing, 1 - worker utilisation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.scenario.schema import load_scenario
from clustersim.sim.sweep import place_actors, simulate_point

ROOT = Path(__file__).resolve().parents[1]
PAPER_METHODS = {"sync_easgd", "easgd_round_robin", "async_easgd", "async_measgd",
                 "hogwild_easgd", "async_sgd", "async_msgd", "hogwild_sgd"}


@pytest.fixture(scope="module")
def headline():
    return load_scenario(ROOT / "scenarios" / "knl_4253.yaml")


@pytest.fixture(scope="module")
def compare():
    return load_scenario(ROOT / "scenarios" / "knl_easgd_compare.yaml")


def _alg(scn, name):
    return next(a for a in scn.algorithms if a.name == name)


def test_headline_compares_the_papers_eight_methods_from_one_node_to_4253_cores(headline):
    assert {a.name for a in headline.algorithms} == PAPER_METHODS
    assert headline.algorithms[0].name == "sync_easgd"
    workers = headline.sweep.workers
    assert workers[0] == 68 and workers[-1] == 4253 and headline.sweep.scaling == "weak"
    assert any("4,253 is prime" in a for a in headline.assumptions)
    assert any("GoogLeNet" in a for a in headline.assumptions)


def test_4253_workers_are_62_full_nodes_and_37_cores(headline):
    plat = headline.platform
    assert plat.spec(0).name == "knl_core"
    hosts = [plat.host(d) for d in range(4253)]
    assert max(hosts) == 62
    assert all(hosts.count(h) == 68 for h in range(62)) and hosts.count(62) == 37
    master = place_actors(4253, 1, plat.num_devices)[-1]
    assert master == 4253 and plat.host(master) == 62  # the 38th core of the 63rd node


def test_sync_easgd_weak_scaling_efficiency_at_4253_cores(headline):
    sync = _alg(headline, "sync_easgd")
    one_node, _ = simulate_point(headline, sync, 68, headline.run.seed)
    full, _ = simulate_point(headline, sync, 4253, headline.run.seed)
    efficiency = (full.throughput / one_node.throughput) / (4253 / 68)
    assert efficiency == pytest.approx(0.915, abs=0.03)
    # the loss is communication (a deeper tree) and waiting for the slowest of more cores
    assert full.comm > one_node.comm and full.wait > one_node.wait
    assert full.compute == pytest.approx(one_node.compute, rel=0.01)


def test_communication_share_87_to_14_and_5_3x_on_six_nodes(compare):
    workers = compare.sweep.workers[-1]
    assert workers == 6 * 68 - 1  # six whole nodes: the master takes the last core
    sync, _ = simulate_point(compare, _alg(compare, "sync_easgd"), workers, compare.run.seed)
    orig, _ = simulate_point(compare, _alg(compare, "easgd_round_robin"), workers,
                             compare.run.seed)
    share_orig = 1.0 - orig.worker_utilization
    share_sync = 1.0 - sync.worker_utilization
    assert share_orig == pytest.approx(0.87, abs=0.05)
    assert share_sync == pytest.approx(0.14, abs=0.05)
    assert sync.throughput / orig.throughput == pytest.approx(5.3, rel=0.20)
    # the original EASGD's time goes to queueing for the master, not to moving bytes
    assert orig.wait > 10 * orig.comm


def test_master_based_easgd_saturates_while_sync_easgd_scales(compare):
    pts = {}
    for name in ("sync_easgd", "easgd_round_robin", "hogwild_easgd"):
        alg = _alg(compare, name)
        pts[name] = [simulate_point(compare, alg, w, compare.run.seed)[0].throughput
                     for w in (203, 407)]
    assert pts["sync_easgd"][1] / pts["sync_easgd"][0] > 1.9
    for name in ("easgd_round_robin", "hogwild_easgd"):
        assert pts[name][1] == pytest.approx(pts[name][0], rel=0.02)
    # lock-free updates overlap the transfers: Hogwild's saturated master serves more
    assert pts["hogwild_easgd"][1] > 1.3 * pts["easgd_round_robin"][1]


def test_masters_saturate_where_their_throughput_stops(headline):
    """The printed saturation point (taken at 68 workers, as predict and sweep do) is where
    the master-based methods' throughput stops: at 272 workers every one of them runs at
    its ceiling batch / service time (within 1%), ~110 workers for the masters whose
    transfers overlap the 18 ms centre update and ~69 for the original EASGD, which sits
    through each 29 ms exchange (was ~82-86 for all, from a service time that counted the
    overlapping transfers twice)."""
    for alg in headline.algorithms[1:]:
        first, _ = simulate_point(headline, alg, 68, headline.run.seed)
        flat, _ = simulate_point(headline, alg, 272, headline.run.seed)
        ceiling = first.batch_per_worker / first.service_time
        assert flat.throughput == pytest.approx(ceiling, rel=0.01), alg.name
        expected = 69 if alg.name == "easgd_round_robin" else 110
        assert first.saturation_workers == pytest.approx(expected, rel=0.05), alg.name
