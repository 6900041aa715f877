"""``placement:``: a model replica per core, per group of cores or per machine, and the
master on a core or on a machine of its own (clustersim/scenario/placement.py).

The checks are physical identities, not fitted figures: 68 grouped cores of
``cori_knl_cores`` are one ``cori_knl`` node (the platform written for whole nodes), a worker
of 4 cores computes 4 times as fast, and a master owning a KNL node updates the centre 68
times as fast as one on a core, so that its link, not its update, bounds it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from clustersim.errors import InputError
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.sweep import prepare_point, simulate_point

ROOT = Path(__file__).resolve().parents[1]
RAW = yaml.safe_load((ROOT / "scenarios" / "knl_unsaturated.yaml").read_text())
SYNC = {"name": "sync_easgd", "tau": 1, "allreduce": "ring"}
ASYNC = {"name": "async_easgd", "tau": 1}


def _scn(alg: dict, **fields):
    raw = copy.deepcopy(RAW)
    raw.update(algorithm=alg, compare=[], **fields)
    raw["run"] = dict(raw["run"], iterations=3, warmup=1)
    return parse_scenario(raw)


def _thr(scn, workers: int) -> float:
    return simulate_point(scn, scn.algorithms[0], workers, 0)[0].throughput


def test_a_machine_of_grouped_cores_is_the_whole_node_platform() -> None:
    """68 cores per worker on the per-core platform predicts what the per-node platform
    (topologies/cori_knl.yaml) predicts, to 0.5% (measured 0.04-0.06%)."""
    cores = _scn(SYNC, placement={"devices_per_worker": 68}, sweep={"workers": [1, 4]})
    nodes = _scn(SYNC, platform="cori_knl", sweep={"workers": [1, 4]})
    assert cores.platform.num_devices == 64  # cori_knl: 512 nodes, the same node and fabric
    for w in (1, 4):
        assert _thr(cores, w) == pytest.approx(_thr(nodes, w), rel=0.005)


def test_a_group_of_cores_is_that_many_times_a_core() -> None:
    one = _scn(SYNC)
    four = _scn(SYNC, placement={"devices_per_worker": 4})
    assert four.platform.num_devices == one.platform.num_devices // 4
    s1, s4 = one.platform.spec(0), four.platform.spec(0)
    assert (s4.peak, s4.mem_bw, s4.memory) == pytest.approx((4 * s1.peak, 4 * s1.mem_bw,
                                                             4 * s1.memory))
    # one worker, nothing to exchange with: compute alone, 4x as fast (roofline per layer)
    assert _thr(four, 1) / _thr(one, 1) == pytest.approx(4.0, rel=0.02)


def test_a_master_on_a_machine_of_its_own() -> None:
    """17 workers fill cores 0-16 of node 0: the master goes to node 1's first core and gets
    the node's 68 cores - its centre update 68x faster, so that its 28 MB each way through
    the node's link bound it instead (service 18.2 ms -> 2.8 ms, W* ~6.5x)."""
    core = _scn(ASYNC)
    node = _scn(ASYNC, placement={"server": "machine"})
    _, _, _, placement, _ = prepare_point(node, node.algorithms[0], 17, 0)
    assert placement[-1] == 68 and placement[:17] == list(range(17))
    m_core = simulate_point(core, core.algorithms[0], 17, 0)[0]
    m_node = simulate_point(node, node.algorithms[0], 17, 0)[0]
    assert m_node.service_time < m_core.service_time / 5
    assert m_node.saturation_workers > 5 * m_core.saturation_workers
    assert m_node.throughput >= m_core.throughput * 0.999  # never slower: nothing else moved


def test_placement_errors_name_the_field_and_the_choices() -> None:
    with pytest.raises(InputError, match="one of 1, 2, 4, 17, 34, 68, not 3") as e:
        _scn(SYNC, placement={"devices_per_worker": 3})
    assert e.value.path == ("placement", "devices_per_worker")
    with pytest.raises(InputError, match="device, machine"):
        _scn(SYNC, placement={"server": "node"})
    with pytest.raises(InputError, match="devices_per_worker"):
        _scn(SYNC, placement={"devices": 2})
    alex = yaml.safe_load((ROOT / "scenarios" / "theano_mpi_alexnet.yaml").read_text())
    alex["placement"] = {"devices_per_worker": 2}
    with pytest.raises(InputError, match="crossbar"):
        parse_scenario(alex)
    # a machine per server, with every machine full of workers: refused, with the count
    full = _scn({"name": "async_sgd", "tau": 1, "shards": 2}, placement={"server": "machine"})
    with pytest.raises(InputError, match="2 server"):
        prepare_point(full, full.algorithms[0], 63 * 68, 0)


def test_placement_is_a_sweep_axis() -> None:
    from clustersim.explore import load_study, run_study, study_points, tidy_rows

    scn, study = load_study(str(ROOT / "scenarios" / "knl_unsaturated.yaml"), [
        f"algorithm={SYNC}", "compare=[]", "sweep.workers=[4]", "run.iterations=3",
        "sweep.axes={placement.devices_per_worker: [1, 4], placement.server: [device]}"])
    points = study_points(study)
    rows = tidy_rows(study, points, run_study(study, points, jobs=1).results)
    by = {r["placement.devices_per_worker"]: r["throughput"] for r in rows}
    assert by[4] > 3.5 * by[1]


def test_every_algorithm_declares_the_servers_that_take_a_device_of_their_own() -> None:
    """``server: machine`` gives each of ``AlgorithmDef.servers(params)`` a machine before
    the actors exist (the cost model is built once, on the grouped platform): that count
    must be the servers the algorithm does not colocate with a worker, for every algorithm
    (hybrid's group-local servers sit on their leaders' devices)."""
    from clustersim.algorithms.base import REGISTRY
    from clustersim.sim.costs import CostModel
    from clustersim.sim.sweep import batch_per_worker, build_job

    raw = yaml.safe_load((ROOT / "scenarios" / "hetero_hybrid.yaml").read_text())
    for name, defn in REGISTRY.items():
        for params in ({}, {"shards": 2}) if "shards" in defn.params else ({},):
            scn = parse_scenario({**raw, "algorithm": {"name": name, **params}, "compare": []})
            alg = scn.algorithms[0]
            job = build_job(scn, alg, defn, 8, 0, CostModel(scn, batch_per_worker(scn, 8), 0))
            own = [a for a in defn.actors(job) if a.role != "worker" and a.colocate is None]
            assert len(own) == defn.servers(alg.params), (name, params)


def test_a_real_run_places_its_actors_where_the_simulator_does(tmp_path: Path) -> None:
    """``run --real`` builds its point with the simulator's own preparation: the master of
    ``server: machine`` gets its own machine there too (it took the next core before, so a
    real run and its prediction disagreed on where the master sat)."""
    from realrun.train import prepare

    raw = copy.deepcopy(RAW)
    raw.update(algorithm=ASYNC, compare=[], placement={"server": "machine"})
    path = tmp_path / "machine.yaml"
    path.write_text(yaml.safe_dump(raw))
    setup = prepare(path, workers=17, iterations=2)
    sim = prepare_point(setup.scenario, setup.algorithm, 17, setup.scenario.run.seed)
    assert setup.placement == sim[3] and setup.placement[-1] == 68
    assert setup.hosts[17] == 1 and {setup.hosts[w] for w in range(17)} == {0}
    assert setup.job == sim[1]
