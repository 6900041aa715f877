"""``network.execution: dependencies``: a collective's once-only steps run as MPI and NCCL run
them - each transfer starts when its own two ranks are done with their earlier steps - at
flow and analytic fidelity (``rounds``, every step a round of all its transfers, stays the
default).  Pinned down: equality with rounds where every transfer costs the same, never
slower than rounds at analytic fidelity, a tree recurrence worked out transfer by transfer
on a fabric with two latencies, flow and analytic equal when latency-bound, bad values."""

from __future__ import annotations

import pytest

from clustersim.catalog import builtin_catalog
from clustersim.collectives import build_schedule
from clustersim.errors import InputError
from clustersim.network.analytic import cost_schedule
from clustersim.network.flowsim import simulate_schedule
from clustersim.network.params import NetworkParams
from clustersim.platform.builders import dragonfly, leaf_spine, star
from clustersim.scenario.schema import parse_scenario

CAT = builtin_catalog()
DEV = CAT.device("v100")
IB = CAT.link("ib_edr")
ROUNDS = NetworkParams()
DEPS = NetworkParams(execution="dependencies")

#: (op, algorithm) pairs with once-only steps (trees, doubling/halving, pairwise, Bruck)
CASES = [("reduce", "ompi_in_order_binary"), ("reduce", "ompi_binary"), ("reduce", "binomial"),
         ("broadcast", "binomial"), ("allreduce", "recursive_doubling"),
         ("allreduce", "rabenseifner_mpich"), ("allreduce", "binomial_tree"),
         ("allgather", "recursive_doubling"), ("alltoall", "pairwise"), ("alltoall", "bruck")]


def _sched(op, alg, p, n):
    return build_schedule(op, alg, p, n, root=0)


def _fabric():
    """4 leaves x 4 hosts, 2 spines: ranks on one leaf are 2 hops apart, others 4."""
    return leaf_spine(4, 2, 4, DEV, IB, IB)


@pytest.mark.parametrize("op, alg", CASES)
@pytest.mark.parametrize("p", [4, 7, 16])
def test_uniform_crossbar_equals_rounds(op, alg, p):
    """Every transfer of a step costs the same on a crossbar: nothing starts earlier."""
    plat = star(p, DEV, IB)
    for n in (4.0, 2.0**20):
        s = _sched(op, alg, p, n)
        for model in (cost_schedule, simulate_schedule):
            assert model(s, plat, None, DEPS).time == pytest.approx(
                model(s, plat, None, ROUNDS).time, rel=1e-9)


@pytest.mark.parametrize("op, alg", CASES)
@pytest.mark.parametrize("n", [4.0, 2.0**16, 2.0**22])
def test_analytic_never_slower_than_rounds(op, alg, n):
    """Each rank's clock after a step is at most the round's end (induction over steps)."""
    plat = _fabric()
    s = _sched(op, alg, 16, n)
    dep = cost_schedule(s, plat, None, DEPS)
    rnd = cost_schedule(s, plat, None, ROUNDS)
    assert dep.time <= rnd.time * (1 + 1e-12)
    assert dep.time == pytest.approx(dep.comm + dep.reduce + dep.convert, rel=1e-12)


def _by_hand(sched, plat, n):
    """The tree recurrence written out transfer by transfer: a transfer starts when both its
    ranks are free and costs its path latency plus n over its slowest link's share (equal
    among the step's transfers on it); a rank is free when its transfers of the step are
    done and it has reduced what it received."""
    free = [0.0] * sched.ranks
    for step in sched.steps:
        assert step.repeat == 1
        new = list(free)
        routes = [plat.route(t.src, t.dst) for t in step.transfers]
        users: dict[int, int] = {}  # a link's transfers in this step share it equally
        for route in routes:
            for lk in route:
                users[lk] = users.get(lk, 0) + 1
        for t, route in zip(step.transfers, routes):
            start = max(free[t.src], free[t.dst])
            end = start + plat.path_latency(route) + t.nbytes / min(
                plat.capacity[lk] / users[lk] for lk in route)
            new[t.src] = max(new[t.src], end)
            new[t.dst] = max(new[t.dst], end)
        for rank, nbytes in step.reduce_bytes().items():
            new[rank] += nbytes / plat.spec(rank).reduce_bw
        free = new
    return max(free)


@pytest.mark.parametrize("alg", ["ompi_in_order_binary", "ompi_binary", "binomial"])
def test_tree_reduce_by_hand_on_two_latencies(alg):
    """Latency-bound (4 B) reduces on the leaf-spine: both models follow the recurrence
    (flow within 0.1%: children that send to one parent share its link for 3 ns), and the
    rounds model is slower whenever a level mixes same-leaf and cross-spine children."""
    plat = _fabric()
    s = _sched("reduce", alg, 16, 4.0)
    want = _by_hand(s, plat, 4.0)
    assert cost_schedule(s, plat, None, DEPS).time == pytest.approx(want, rel=1e-9)
    assert simulate_schedule(s, plat, None, DEPS).time == pytest.approx(want, rel=1e-3)
    rounds = cost_schedule(s, plat, None, ROUNDS).time
    if alg == "ompi_in_order_binary":  # its levels mix 2-hop and 4-hop children
        assert rounds > want * 1.05


def test_dragonfly_flow_and_analytic_agree_when_latency_bound():
    plat = dragonfly(4, 2, 2, DEV, IB, IB, IB)
    for op, alg in CASES:
        s = _sched(op, alg, 16, 4.0)
        flow = simulate_schedule(s, plat, None, DEPS).time
        ana = cost_schedule(s, plat, None, DEPS).time
        assert flow == pytest.approx(ana, rel=0.01), (op, alg)


def test_scenario_field_and_its_errors():
    raw = {"platform": "crossbar16", "network": {"execution": "dependencies"},
           "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [4],
                         "sizes": ["1 MiB"]}}
    assert parse_scenario(raw).network.execution == "dependencies"
    del raw["network"]
    assert parse_scenario(raw).network.execution == "rounds"
    raw["network"] = {"execution": "async"}
    with pytest.raises(InputError) as exc:
        parse_scenario(raw)
    msg = str(exc.value)
    assert "network.execution" in msg and "rounds" in msg and "dependencies" in msg
    with pytest.raises(ValueError):
        NetworkParams(execution="async")


def test_adaptive_routing_runs_each_transfer_through_ugal():
    """With UGAL every transfer of a dependency-driven step is routed as it starts (one
    pair at a time); a latency-bound tree costs what it costs under minimal routing (within
    0.1%: UGAL may send a child around a link its sibling's 4 bytes share for 0.3 ns)."""
    from clustersim.platform.policies import RoutingSpec

    base = dragonfly(4, 2, 2, DEV, IB, IB, IB)
    s = _sched("reduce", "ompi_in_order_binary", 16, 4.0)
    minimal = simulate_schedule(s, base.with_routing(RoutingSpec("minimal")), None, DEPS)
    ugal = simulate_schedule(s, base.with_routing(RoutingSpec("ugal")), None, DEPS)
    assert ugal.time == pytest.approx(minimal.time, rel=1e-3)
    assert ugal.time < simulate_schedule(s, base, None, ROUNDS).time
