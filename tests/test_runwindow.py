"""A point's run window is whole exchange periods (sim/runwindow.py): with tau = 10 and
knl_4253's one warm-up and one measured step no worker ever exchanged, so the point read as
pure compute (100 % efficient, master idle) - the headline band's "99.9 % at tau = 10"."""

from __future__ import annotations

from types import SimpleNamespace

from clustersim.scenario.schema import load_scenario
from clustersim.scenario.specs import RunSpec
from clustersim.sim.runwindow import aligned_run
from clustersim.sim.sweep import simulate_point, sweep_cases


def _alg(name="async_easgd", **params):
    return SimpleNamespace(name=name, params=params)


def test_windows_round_up_to_whole_periods():
    run = RunSpec(iterations=2, warmup=1)
    assert aligned_run(run, _alg(tau=10)) == RunSpec(iterations=20, warmup=10)
    assert aligned_run(run, _alg("bsp", every=4, exchange="weights")) == RunSpec(
        iterations=8, warmup=4)
    assert aligned_run(run, _alg("bsp", every=4)) is run  # gradients: every step
    assert aligned_run(run, _alg("hybrid", k=3)) == RunSpec(iterations=6, warmup=3)
    assert aligned_run(RunSpec(iterations=30, warmup=4), _alg(tau=2)) == RunSpec(
        iterations=30, warmup=4)  # already whole periods: the same object's values
    assert aligned_run(RunSpec(iterations=5, warmup=0), _alg(tau=2)) == RunSpec(
        iterations=6, warmup=0)  # no warm-up stays none
    for params in ({}, {"tau": 1}, {"every": 1}, {"p": 0.01}):
        assert aligned_run(run, _alg(**params)) is run


def test_a_long_period_is_measured_with_its_exchanges():
    """Sync EASGD and Async SGD at tau 10 on knl_4253's cores: the measured window holds
    exchanges (the master works, Sync EASGD pays its all-reduce once per 10 steps)."""
    scn = load_scenario("scenarios/knl_4253.yaml", [
        "algorithm={name: sync_easgd, tau: 10, label: se}",
        "compare=[{name: async_sgd, tau: 10, label: as}]", "sweep.workers=[68, 272]"])
    cases = {t: (s, a) for t, s, a in sweep_cases(scn)}
    s, a = cases["se"]
    m1, _ = simulate_point(s, a, 68, 0)
    s1 = load_scenario("scenarios/knl_4253.yaml", ["sweep.workers=[68]"])
    base, _ = simulate_point(s1, s1.algorithm, 68, 0)  # tau 1: an exchange every step
    assert 0 < m1.comm_share < base.comm_share  # about a tenth of tau 1's
    assert base.comm_share / m1.comm_share > 5
    s, a = cases["as"]
    m2, _ = simulate_point(s, a, 272, 0)
    assert m2.server_utilization > 0.1 and m2.comm_total > 0


def test_predict_says_which_runs_were_stretched(tmp_path, capsys):
    """A run of other lengths than run: says is never silent: a line under the tables and
    the JSON's run.stretched (absent when nothing was)."""
    import json

    from clustersim.cli import main

    out = tmp_path / "p.json"
    assert main(["predict", "knl_4253", "--set", "compare=[{name: async_sgd, tau: 4, "
                 "label: A4}]", "--set", "sweep.workers=[68]", "--no-band", "-j", "1",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "A4 ran 4 warm-up + 4 measured steps (run: says 1 + 1)" in " ".join(text.split())
    run = json.loads(out.read_text())["run"]
    assert run["stretched"] == {"A4": {"warmup": 4, "iterations": 8, "period": 4}}
    assert run["iterations"] == 2 and run["warmup"] == 1  # what the scenario says
    assert "Sync EASGD ran" not in text  # tau 1: as written


def test_a_real_run_is_stretched_as_the_simulation_is_and_says_so():
    """run --real prepares its point with the simulator's prepare_point: tau 2 and 9
    iterations (4 warm-up) run 4 + 6; the setup keeps what was asked, for the note."""
    from realrun.train import prepare

    setup = prepare("scenarios/real_async_easgd.yaml", iterations=9)
    assert (setup.scenario.run.warmup, setup.scenario.run.iterations) == (4, 10)
    assert setup.job.iterations == 10
    assert setup.asked is not None and setup.asked.iterations == 9
    assert prepare("scenarios/real_async_easgd.yaml").asked is None  # 30 = 4 + 26: whole


def test_a_sweep_says_which_points_ran_longer(tmp_path, capsys):
    """A sweep's run.iterations and tau axes show what was asked; the table's warmup_steps
    and measured_steps are the steps run, and the summary counts the stretched points (the
    rows had shown 2 iterations for a tau-3 point that ran 6)."""
    import csv

    from clustersim.cli import main

    scn = tmp_path / "sw.yaml"
    scn.write_text("name: sw\nplatform: cori_knl_cores\nworkload: {model: googlenet, "
                   "batch_per_worker: 8}\nalgorithm: {name: async_easgd, tau: 1}\nsweep:\n"
                   "  workers: [8]\n  axes:\n    algorithm.tau: [1, 3]\n"
                   "    run.iterations: [2, 5]\nrun: {iterations: 2, warmup: 1}\n")
    assert main(["sweep", str(scn), "--out", str(tmp_path / "o"), "-j", "1",
                 "--no-cache"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("2 points ran longer than 'run:' asked, in whole exchange periods (e.g. "
            "async_easgd at 8 workers, algorithm.tau=3, run.iterations=2: 3 warm-up + 3 "
            "measured steps for 1 + 1)") in text
    rows = list(csv.DictReader((tmp_path / "o" / "sweep.csv").open()))
    got = {(r["algorithm.tau"], r["run.iterations"]): (r["warmup_steps"], r["measured_steps"])
           for r in rows}
    assert got == {("1", "2"): ("1", "1"), ("1", "5"): ("1", "4"),
                   ("3", "2"): ("3", "3"), ("3", "5"): ("3", "6")}
    assert "stretched" not in rows[0]  # a flag for the summary, not a column
