"""What audit 23 found wrong in the reference listings and the algorithm interface: each
selector once per op, a selector's allreduce rule on allreduce's rows only, small models'
FLOPs not rounded to zero, every parameter's source, and an AlgorithmDef's convergence model
and server count."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.collectives import describe_algorithm, list_algorithms
from clustersim.collectives.selection import SELECTORS, selector_ops


def test_every_collective_algorithm_is_listed_once_per_op() -> None:
    """The libraries came to name MPICH's versions too, and the selectors added them again:
    mpich-4, -3.3 and -3.2 were listed twice for every op."""
    assert len(SELECTORS) == len(set(SELECTORS))
    for op, algs in list_algorithms().items():
        dups = sorted({a for a in algs if algs.count(a) > 1})
        assert not dups, (op, dups)
        assert selector_ops(op).count("mpich-4") <= 1  # ps_push has no selectors


@pytest.mark.parametrize("sel", ["mpich-4", "mpich-3.3", "mpich-3.2"])
def test_a_selector_states_its_allreduce_rule_on_allreduce_only(sel: str) -> None:
    """Every op's row had read "allreduce RD to 8 B ...", against that op's own rule."""
    assert "recursive doubling" in describe_algorithm("allreduce", sel).split("; allreduce: ")[1]
    for op in ("broadcast", "reduce", "allgather", "alltoall", "gather", "scatter", "p2p"):
        assert "allreduce" not in describe_algorithm(op, sel), op


def test_small_models_flops_are_not_printed_as_zero(capsys) -> None:
    assert main(["list", "models"]) == 0
    rows = {ln.split("│")[1].strip(): ln.split("│")[3].strip()
            for ln in capsys.readouterr().out.splitlines() if ln.count("│") >= 4}
    assert rows["lenet5"] == "0.00087" and rows["mlp"] == "0.0037"
    assert rows["resnet50"] == "8.28"


def test_an_unknown_collective_algorithm_lists_the_selectors_too() -> None:
    """``build_schedule``'s refusal listed the textbook algorithms only, though the
    selectors are algorithm names wherever one is taken."""
    from clustersim.collectives import build_schedule
    from clustersim.errors import InputError

    with pytest.raises(InputError) as bad:
        build_schedule("allreduce", "mpich-5", 4, 1024)
    assert "did you mean 'mpich-4'?" in bad.value.message
    assert all(s in bad.value.message for s in ("auto", "nccl", "openmpi-4.0", "ring"))


def test_every_algorithm_parameter_states_its_source() -> None:
    """docs/writing_an_algorithm.md: every parameter is a Param with a default, a help line
    and its source; bsp's fp16 had none."""
    from clustersim.algorithms.base import list_algorithms as algorithms

    missing = [f"{name}.{key}" for name, d in algorithms().items()
               for key, prm in d.params.items() if not prm.source.strip() or not prm.help]
    assert not missing


def test_an_algorithm_without_a_convergence_model_gets_its_familys() -> None:
    """An "async" algorithm that left out ``convergence=`` had been given the synchronous
    time-to-target model without a word; it now gets its family's, and a name outside the
    models is refused when the algorithm is defined."""
    from clustersim.algorithms.base import AlgorithmDef

    def make(family: str, **kw) -> AlgorithmDef:
        return AlgorithmDef("x", family, "test", {}, actors=lambda job: [], **kw)

    assert make("async").convergence == "async"
    assert make("sync").convergence == "sync"
    assert make("hybrid").convergence == "hybrid"
    assert make("async", convergence="elastic").convergence == "elastic"
    with pytest.raises(ValueError, match="convergence must be one of sync, async"):
        make("async", convergence="elastik")


def _one_server_algorithm(name: str, family: str, worker, server, **kw):
    """A registered test algorithm: workers ``0..p-1`` running ``worker``, one actor
    ``server`` after them (the shipped algorithms are loaded first: the registry fills on
    first use)."""
    from clustersim.algorithms import base
    from clustersim.algorithms.base import ActorSpec, AlgorithmDef

    base.list_algorithms()
    return base.register(AlgorithmDef(
        name, family, "test", {}, **kw,
        actors=lambda job: [*(ActorSpec(w, "worker", w, worker) for w in range(job.workers)),
                            ActorSpec(job.workers, "server", 0, server)]))


@contextmanager
def _point_of(tmp_path: Path, defn, model: str, workers: int, iterations: int, warmup: int):
    """The algorithm's scenario at one point (its registration undone afterwards)."""
    from clustersim.algorithms import base
    from clustersim.scenario.schema import load_scenario

    try:
        scn = tmp_path / "s.yaml"
        scn.write_text(f"name: s\nplatform: fattree_k16\nworkload: {{model: {model}, "
                       f"batch_per_worker: 8}}\nalgorithm: {{name: {defn.name}}}\n"
                       f"sweep: {{workers: [{workers}]}}\n"
                       f"run: {{iterations: {iterations}, warmup: {warmup}}}\n")
        s = load_scenario(str(scn))
        yield s, s.algorithms[0]
    finally:
        base.REGISTRY.pop(defn.name, None)


def test_servers_must_match_the_server_actors(tmp_path: Path) -> None:
    """An algorithm whose server actor takes a device of its own but whose ``servers()``
    says 0 had run with the server on no device of its own; it is told what to set."""
    from clustersim.algorithms.ops import Compute
    from clustersim.sim.sweep import simulate_point

    def body(ctx):
        yield Compute("update", nbytes=1.0)

    defn = _one_server_algorithm("one_server_undeclared", "async", body, body)
    with _point_of(tmp_path, defn, "mlp", 2, 2, 0) as (s, alg), \
            pytest.raises(RuntimeError, match="made 1 server actor.*servers\\(\\) says 0"):
        simulate_point(s, alg, 2, 0)


def test_a_hybrid_algorithm_without_a_group_parameter_gets_a_time_to_target(
        tmp_path: Path) -> None:
    """The hybrid model read ``params["group"]``, hybrid's own parameter: an algorithm of
    family "hybrid" written from the guide without it died with a KeyError.  It groups by
    machine, as hybrid's default does."""
    from clustersim.algorithms.base import iteration_marks
    from clustersim.algorithms.ops import Compute
    from clustersim.sim.sweep import simulate_point

    fwd, bwd = Compute("forward"), Compute("backward")

    def worker(ctx):
        marks = iteration_marks(ctx.job.iterations)
        for it in range(ctx.job.iterations):
            yield marks[it]
            yield fwd
            yield bwd

    def server(ctx):
        yield Compute("update", nbytes=1.0)

    defn = _one_server_algorithm("hybrid_like", "hybrid", worker, server,
                                 servers=lambda params: 1)
    assert defn.convergence == "hybrid"
    with _point_of(tmp_path, defn, "resnet50", 4, 4, 1) as (s, alg):
        m, _ = simulate_point(s, alg, 4, 0)
        assert m.time_to_target is not None and m.time_to_target > 0
