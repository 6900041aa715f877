"""QA 16 (time to accuracy): what the convergence model is fed.

* HIGH-1: the staleness samples are the measured steps', the window of the samples/s that
  turns steps into time - not the warm-up round's too, where every worker starts at once and
  its pushes see 0, 1, ..., p-1 updates.  With them the time to target was 13-25 % short at
  4,253 workers and moved with ``run.iterations``.
"""

from __future__ import annotations

import math

import pytest

from clustersim.scenario.schema import PROJECT_ROOT, load_scenario
from clustersim.sim.sweep import simulate_point


def _msgd(iterations: int, workers: int = 34):
    scn = load_scenario(PROJECT_ROOT / "scenarios" / "knl_unsaturated.yaml",
                        sets=[f"run.iterations={iterations}", "run.warmup=1"])
    alg = next(a for a in scn.algorithms if a.name == "async_msgd")
    return simulate_point(scn, alg, workers, 0)


def test_staleness_is_the_measured_steps_and_the_time_to_target_keeps_to_run_length() -> None:
    """34 workers of one KNL node, one master: in steady state every push finds the other
    33 workers' updates applied since its read, so its staleness is 33 whatever the run's
    length (it read 24.75 over 2 iterations and 30.25 over 6, the warm-up's 0..33 averaged
    in), and the time to target moves < 1.5 % between the two lengths (it moved 4.3 %)."""
    short, run = _msgd(2)
    long, _ = _msgd(6)
    assert short.staleness_mean == long.staleness_mean == 33.0
    assert long.time_to_target == pytest.approx(short.time_to_target, rel=0.015)
    # the warm-up's samples are still recorded, only left out of the window
    everything = run.records("staleness")
    measured = run.records("staleness", measured=True)
    assert len(everything) == 2 * 34 and len(measured) == 34
    assert sorted(everything[:34]) == [float(v) for v in range(34)]


def test_a_real_runs_staleness_is_taken_after_the_warm_up_too() -> None:
    """The trace reader keeps the same window: a server's staleness records before the last
    worker's mark (t = 1 s) are the warm-up's."""
    from clustersim.trace import TraceEvent
    from clustersim.trace_metrics import measured_metrics

    ev = []
    for k in range(4):
        ev.append(TraceEvent(0, "worker", "record", float(k), float(k), "iteration", value=k))
        ev.append(TraceEvent(0, "worker", "compute", float(k), k + 0.9, "compute"))
        ev.append(TraceEvent(1, "server", "record", k + 0.95, k + 0.95, "staleness",
                             value=0.0 if k == 0 else 2.0))
    ev += [TraceEvent(0, "worker", "record", 4.0, 4.0, "actor_end", value=1),
           TraceEvent(1, "server", "record", 4.0, 4.0, "actor_end", value=0)]
    assert measured_metrics(ev, algorithm="x", batch=1, warmup=1).staleness_mean == 2.0
    assert measured_metrics(ev, algorithm="x", batch=1, warmup=0).staleness_mean == 1.5


def test_periodic_weight_averaging_pays_the_replicas_drift() -> None:
    """QA 16 HIGH-2: ``bsp`` with ``exchange: weights, every: k`` (local SGD) is the elastic
    form with tau = k, beta = 1, not synchronous SGD: the run's steps are
    S_min (1 + B/(pB) + k_d D((k-1)/2)).  Every 1 stays the synchronous law, and one worker
    has nobody to drift from."""
    from types import SimpleNamespace

    from clustersim.convergence import load_profile, predict
    from clustersim.sim.tta import run_stats

    prof = load_profile("resnet50")
    m = SimpleNamespace(iteration_time=0.25, throughput=8 * 64 / 0.25)
    sync = predict(prof, run_stats("sync", "bsp", {"exchange": "gradients", "every": 1},
                                   "momentum", 8, 64.0, m, []))
    for k in (10, 100):
        got = predict(prof, run_stats("sync", "bsp", {"exchange": "weights", "every": k},
                                      "momentum", 8, 64.0, m, []))
        # the closed form, written out (audit I M4: this compared the package with itself):
        # S_min (1 + mean(B_noise)/(8 x 64) + D((k-1)/2)), D(d) = 1/cos(d pi/(2d+1)) - 1
        b_noise = (20_000 - 2_000) / math.log(10.0)
        s_min = 90 * 1_281_167 / 256 / (1 + b_noise / 256)
        d = (k - 1) / 2
        want = s_min * (1 + b_noise / 512 + 1 / math.cos(d * math.pi / (2 * d + 1)) - 1)
        assert got.steps_to_target == pytest.approx(want, rel=1e-9)
        assert got.time_to_target > sync.time_to_target * (1.2 if k == 10 else 4.0)
    one = predict(prof, run_stats("sync", "bsp", {"exchange": "weights", "every": 1},
                                  "momentum", 8, 64.0, m, []))
    assert one.steps_to_target == sync.steps_to_target
    alone = SimpleNamespace(iteration_time=0.25, throughput=64 / 0.25)
    assert (predict(prof, run_stats("sync", "bsp", {"exchange": "weights", "every": 10},
                                    "momentum", 1, 64.0, alone, [])).steps_to_target
            == predict(prof, run_stats("sync", "bsp", {"exchange": "gradients", "every": 1},
                                       "momentum", 1, 64.0, alone, [])).steps_to_target)


def _resnet_never() -> tuple[list[str], object]:
    """theano_mpi_resnet50 at 8 x 512 with the linear LR rule: every strategy diverges."""
    import io

    from rich.console import Console

    from clustersim.report.training import print_training
    from clustersim.sim.sweep import run_sweep

    scn = load_scenario(PROJECT_ROOT / "scenarios" / "theano_mpi_resnet50.yaml",
                        sets=['workload.convergence={"lr_rule": "linear"}',
                              "workload.batch_per_worker=512", "sweep.workers=[8]",
                              "run.iterations=3", "run.warmup=1"])
    res = run_sweep(scn, jobs=1)
    out = io.StringIO()
    print_training(Console(file=out, width=200), scn, res, wide=True)
    return out.getvalue().splitlines(), res


def test_the_report_says_what_the_target_is_and_names_every_algorithm_that_never_gets_there(
        ) -> None:
    """QA 16 MEDIUM-2, LOW-2, LOW-3: a line says the target and the assumed noise scale;
    "never reaches the target" names every algorithm the reason holds for (it named the
    first); a divergent point keeps its effective batch in the JSON terms (they were 0)."""
    lines, res = _resnet_never()
    target = [ln for ln in lines if ln.startswith("time to target:")]
    assert target and "top1 0.764" in target[0] and "2,000 -> 20,000" in target[0]
    assert "assumed" in target[0] and "linear LR" in target[0]
    never = [ln for ln in lines if ln.startswith("never reaches the target:")]
    assert len(never) == 1 and all(t in never[0] for t in res.points)
    p = next(iter(res.points.values()))[-1]
    assert p.time_to_target is None and p.convergence_terms["batch_eff"] == 8 * 512


def test_a_band_says_how_many_samples_never_reach_the_target() -> None:
    from clustersim.report.uncertainty import _cell
    from clustersim.uncertainty.bands import quantiles

    b = quantiles([3600.0, 7200.0, None, None])
    assert _cell("time_to_target", b, 4).endswith("(2/4 never)")
    assert "never)" not in _cell("time_to_target", quantiles([3600.0, 7200.0]), 2)


def test_async_easgd_default_alpha_is_the_same_run_as_the_same_alpha_given() -> None:
    """QA 16 LOW-7: the simulator takes alpha = beta / p when alpha is not given; the
    convergence model now does too (the centre lag was 0.11 tau one way, 0.69 tau the
    other, for the same simulated run)."""
    from types import SimpleNamespace

    from clustersim.sim.tta import run_stats

    m = SimpleNamespace(iteration_time=1.0, throughput=100.0)
    a = run_stats("elastic", "async_easgd", {"tau": 4}, "sgd", 16, 8.0, m, [])
    b = run_stats("elastic", "async_easgd", {"tau": 4, "alpha": 0.9 / 16}, "sgd", 16, 8.0,
                  m, [])
    assert a == b and a.beta == pytest.approx(1 - (1 - 0.9 / 16) ** 16)


def test_no_analytic_twin_for_an_emulation_off_its_profiles_settings() -> None:
    """QA 16 MEDIUM-1: the digits profile's steps are to accuracy 0.9 at lr 0.1, batch 32,
    hidden 32; a run at another target or learning rate gets no analytic time (it printed
    target 0.9's beside an emulation that never got there), and says why."""
    from types import SimpleNamespace

    from clustersim.sim.convfit import twin_mismatch

    def spec(target: float = 0.9, **settings: object) -> SimpleNamespace:
        return SimpleNamespace(task="digits", target=target, task_settings=settings)

    assert twin_mismatch(spec()) is None
    assert twin_mismatch(spec(batch=32)) is None
    assert twin_mismatch(spec(0.999)) == "target 0.999 (profile: 0.9)"
    assert twin_mismatch(spec(lr=0.2)) == "lr 0.2 (profile: 0.1)"
    assert twin_mismatch(SimpleNamespace(task="gaussian", target=0.9, task_settings={})) \
        is None  # no profile, nothing to compare


def test_staleness_p90_is_the_90th_percentile_of_a_spread_out_run() -> None:
    """audit J M1: the table's "staleness mean/p90" had no test where the percentile
    matters.  Staleness 0, 1, ..., 9 over the measured steps: mean 4.5, max 9, and the 90th
    percentile by linear interpolation between order statistics (numpy's default, the
    method Hyndman & Fan 1996 number 7): 8 + 0.1 x (9 - 8) = 8.1."""
    from clustersim.trace import TraceEvent
    from clustersim.trace_metrics import measured_metrics

    ev = []
    for k in range(11):
        ev.append(TraceEvent(0, "worker", "record", float(k), float(k), "iteration", value=k))
        ev.append(TraceEvent(0, "worker", "compute", float(k), k + 0.9, "compute"))
        if k:  # the warm-up step's push stays out
            ev.append(TraceEvent(1, "server", "record", k + 0.95, k + 0.95, "staleness",
                                 value=float((7 * k) % 10)))  # 7, 4, 1, 8, ...: 0-9, shuffled
    ev += [TraceEvent(0, "worker", "record", 11.0, 11.0, "actor_end", value=1),
           TraceEvent(1, "server", "record", 11.0, 11.0, "actor_end", value=0)]
    m = measured_metrics(ev, algorithm="x", batch=1, warmup=1)
    assert m.staleness_mean == pytest.approx(4.5, abs=1e-12)
    assert m.staleness_p90 == pytest.approx(8.1, abs=1e-12)
    assert m.staleness_max == 9.0
