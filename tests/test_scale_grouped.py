"""Grouped runs (clustersim/sim/grouped.py) against the worker-by-worker engine.

A grouped run simulates one representative worker per device kind and copies its figures to
the others; it claims to be exact.  These tests hold it to that: every metric of the point,
``sim_events`` included, must be *equal* (not close) to the exact engine's, at 64 to 4,096
GPUs, on a homogeneous fat-tree and on a platform of two device kinds; with jitter, or with a
trace, the exact path must be taken (and the results are then trivially the same).
"""

from __future__ import annotations

import pytest

import clustersim.sim.sweep as sweep
from clustersim.scenario.schema import parse_scenario
from clustersim.sim.grouped import worker_classes


def _scn(k: int, *, jitter: float = 0.0, strategy: str = "nccl32", overlap: bool = True,
         node: dict | None = None, fidelity: str = "auto"):
    plat = {"topology": "fat_tree", "k": k, "device": "v100", "link": "eth100g"}
    if node is not None:
        plat["node"] = node
    return parse_scenario({
        "name": "grouped", "platform": plat,
        "workload": {"model": "resnet50", "batch_per_worker": 32, "bucket": "25 MiB",
                     "jitter": jitter},
        "algorithm": {"name": "bsp", "strategy": strategy, "overlap": overlap},
        "run": {"iterations": 3, "warmup": 1, "fidelity": fidelity}})


def _both(scn, workers: int, monkeypatch):
    out = []
    for grouped in (False, True):
        monkeypatch.setattr(sweep, "GROUPED", grouped)
        m, run = sweep.simulate_point(scn, scn.algorithm, workers, 0)
        out.append((m.to_dict(), run))
    return out


@pytest.mark.parametrize("k, workers, strategy, overlap", [
    (8, 64, "nccl32", True),          # 64 GPUs, buckets overlapped with backward
    (8, 128, "ar", False),            # host-staged, barrier first, after backward
    (16, 512, "ring", True),
    (16, 1024, "rabenseifner", True),
])
def test_grouped_equals_exact(k, workers, strategy, overlap, monkeypatch):
    scn = _scn(k, strategy=strategy, overlap=overlap)
    (exact, r0), (grouped, r1) = _both(scn, workers, monkeypatch)
    assert grouped == exact
    assert r1.sim_events == r0.sim_events and r1.makespan == r0.makespan
    # per worker, not only the means
    assert [(a.rank, a.device, a.compute, a.comm, a.wait, a.iterations, a.mark)
            for a in r1.actors] == [(a.rank, a.device, a.compute, a.comm, a.wait,
                                     a.iterations, a.mark) for a in r0.actors]


@pytest.mark.slow
def test_grouped_equals_exact_4096(monkeypatch):
    scn = _scn(16, node={"devices": 4, "layout": "crossbar", "nics": 1})
    (exact, _), (grouped, _) = _both(scn, 4096, monkeypatch)
    assert grouped == exact


def test_grouped_two_device_kinds(monkeypatch):
    """Half K80s, half V100s (explicit platform): two classes; the V100s wait for the
    K80s at every collective, and that wait must come out the same."""
    nodes = [{"name": "sw", "kind": "switch"}]
    links = []
    for i in range(32):
        nodes.append({"name": f"g{i}", "device": "k80" if i % 2 else "v100", "host": i})
        links.append(["sw", f"g{i}", "eth100g"])
    scn = parse_scenario({
        "name": "mixed", "platform": {"topology": "explicit", "nodes": nodes, "links": links},
        "workload": {"model": "resnet50", "batch_per_worker": 32, "bucket": "25 MiB"},
        "algorithm": {"name": "bsp", "strategy": "ring", "overlap": True},
        "run": {"iterations": 3, "warmup": 1, "fidelity": "analytic"}})
    _, job, actors, placement, _ = sweep.prepare_point(scn, scn.algorithm, 32, 0)
    classes = worker_classes("bsp", scn, actors, placement, False)
    assert classes is not None and [len(c) for c in classes] == [16, 16]
    (exact, r0), (grouped, r1) = _both(scn, 32, monkeypatch)
    assert grouped == exact and exact["wait"] > 0
    assert r1.sim_events == r0.sim_events


@pytest.mark.parametrize("workers", [64, 512])
def test_jitter_takes_the_exact_path(workers, monkeypatch):
    scn = _scn(16, jitter=0.05)
    _, job, actors, placement, _ = sweep.prepare_point(scn, scn.algorithm, workers, 0)
    assert worker_classes("bsp", scn, actors, placement, False) is None
    (exact, _), (grouped, _) = _both(scn, workers, monkeypatch)
    assert grouped == exact and exact["wait"] > 0  # stragglers: somebody waits


def test_where_grouping_is_refused():
    scn = _scn(8)
    _, job, actors, placement, _ = sweep.prepare_point(scn, scn.algorithm, 64, 0)
    assert worker_classes("bsp", scn, actors, placement, False) is not None
    assert worker_classes("bsp", scn, actors, placement, True) is None        # trace
    assert worker_classes("gossip", scn, actors, placement, False) is None    # rank-dependent
    assert worker_classes("bsp", scn, actors, [0] * 64, False) is None        # shared device
    flow = _scn(8, fidelity="flow")
    assert worker_classes("bsp", flow, actors, placement, False) is None      # flow collectives


def test_grouped_stats_read_like_the_copied_list(monkeypatch):
    """A grouped run's actors (GroupedStats) answer like the list of copies they replace:
    length, indexing (negative, slices), iteration, one object per actor, and the columns
    and records the metrics read without making the copies."""
    import numpy as np

    from clustersim.sim.grouped import GroupedStats, _copy

    (_, exact), (_, grouped) = _both(_scn(8, node={"devices": 2, "layout": "crossbar"}),
                                     64, monkeypatch)
    stats = grouped.actors
    assert isinstance(stats, GroupedStats) and len(stats) == len(exact.actors) == 64
    rep = stats._reps[0]
    rep.records["staleness"].extend([3.0, 1.0])  # as if the workers had recorded some
    copies = [_copy(rep, a.rank, a.device) for a in exact.actors]
    assert [(a.rank, a.device) for a in stats] == [(a.rank, a.device) for a in exact.actors]
    assert stats[-1] is stats[63] and stats[5:7] == [stats[5], stats[6]]
    with pytest.raises(IndexError):
        stats[64]
    marks, now = stats.worker_columns()
    assert np.array_equal(now, [(a.compute, a.comm, a.wait, a.comm_total, a.bytes_sent, a.end)
                                for a in copies])
    assert np.array_equal(marks, [a.mark for a in copies])
    assert stats.records_of("staleness") == [3.0, 1.0] * 64
    assert stats.records_of("update") == []
