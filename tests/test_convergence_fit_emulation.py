"""The emulation side of the fit: a tiny real grid end to end (``clustersim calibrate
--emulation``), the ``constants:`` field of a scenario's profile, the agreement helper."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from clustersim.cli import main
from clustersim.convergence import RunStats, load_profile, predict
from clustersim.convergence.constants import load_constants_file
from clustersim.errors import InputError
from clustersim.scenario.schema import load_scenario

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def test_tiny_grid_writes_a_constants_file_load_constants_reads(tmp_path, capsys):
    out = tmp_path / "k.yaml"
    assert main(["calibrate", "--emulation", "--grid", "small", "--tasks",
                 "teacher_student", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    text = cap.out
    assert "held out" in text and "median |error|" in text
    # teacher_student alone fits (its GoSGD runs bound k_g, the scan gives its interval)
    assert cap.err == "" and "WARNING" not in out.read_text()
    k = load_constants_file(out)
    import yaml

    doc = yaml.safe_load(out.read_text())["constants"]
    fitted = [n for n, v in doc.items() if v["status"] == "fitted"]
    assert "k_g" in fitted  # the small grid moves some terms
    for n in fitted:
        lo, hi = doc[n]["interval"]
        assert lo <= getattr(k, n) <= hi and "grid small" in doc[n]["fitted_on"]


def test_constants_that_predict_never_are_written_with_a_warning(tmp_path, capsys,
                                                                 monkeypatch):
    """A fit whose constants say runs that reached the target never do (here: the theory
    values put in place of the fit: 6 of the 8 runs diverge) is written, to be
    looked at, and says so on stderr and in the file's header, with what the run did not
    try (audit 22; the advice had named the default tasks when they had been used)."""
    from dataclasses import replace

    import clustersim.sim.convfit as convfit
    from clustersim.convergence.constants import Constants

    real = convfit.calibrate

    def theory(*args, **kw):
        cal = real(*args, **kw)
        return replace(cal, fit=replace(cal.fit, constants=Constants()))

    monkeypatch.setattr(convfit, "calibrate", theory)
    out = tmp_path / "k.yaml"
    assert main(["calibrate", "--emulation", "--grid", "small", "--tasks",
                 "teacher_student", "--out", str(out), "-q"]) == 0
    warned = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("warning: ")]
    assert "predict 'never' for 6 of 8 fitted runs" in warned[0], warned
    assert warned[-1] == ("warning: these constants are not fit for use; fit on more tasks "
                          "(--tasks teacher_student,digits) or a larger grid (--grid full "
                          "--seeds 3)")
    header = [ln for ln in out.read_text().splitlines() if ln.startswith("# WARNING: ")]
    assert [h.removeprefix("# WARNING: ") for h in header] == [
        w.removeprefix("warning: ") for w in warned]
    # and a scenario that uses the file says so where it names its constants (audit A L5)
    scn = tmp_path / "s.yaml"
    scn.write_text("name: s\nplatform: crossbar16\nworkload: {model: resnet18, "
                   "batch_per_worker: 32, convergence: {constants: k.yaml}}\n"
                   "algorithm: {name: async_sgd}\nsweep: {workers: [4]}\n"
                   "run: {iterations: 3, warmup: 1}\n")
    assert main(["predict", str(scn), "--no-band"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    said = "; ".join(w.removeprefix("warning: ") for w in warned)
    assert f"asynchrony constants: the scenario's (its file warns: {said})" in text


def test_the_default_tasks_fit_without_a_warning(tmp_path, capsys):
    """digits and teacher_student together move the constants: no fitted run is predicted
    never to converge, the held-out error is finite, nothing is warned."""
    out = tmp_path / "k.yaml"
    assert main(["calibrate", "--emulation", "--out", str(out), "-q"]) == 0
    assert capsys.readouterr().err == ""
    assert "WARNING" not in out.read_text()


def test_calibrate_emulation_rejects_bad_options(tmp_path):
    assert main(["calibrate", "--emulation", "--tasks", "mnist", "-q"]) == 2
    assert main(["calibrate", "--emulation", "--seeds", "0", "-q"]) == 2


def _stats() -> RunStats:
    return RunStats("async", 8, 32, 1e-3, 1e4, staleness=[3.0, 5.0, 7.0])


def test_constants_mapping_in_the_profile_is_what_predict_uses():
    base = load_profile("resnet50")
    mine = load_profile("resnet50", {"constants": {"k_s": 0.0}})
    assert mine.constants is not None and mine.constants.k_s == 0.0
    sync = predict(base, RunStats("sync", 1, 32, 1e-3, 1e4))
    assert predict(mine, _stats()).steps_to_target == pytest.approx(sync.steps_to_target)
    assert predict(base, _stats()).steps_to_target > sync.steps_to_target


def test_constants_file_relative_to_the_scenario(tmp_path):
    (tmp_path / "k.yaml").write_text("constants:\n  k_s: {value: 0.0, status: fitted}\n")
    src = (Path(__file__).resolve().parents[1] / "scenarios" / "knl_easgd_compare.yaml"
           ).read_text()
    (tmp_path / "s.yaml").write_text(src.replace(
        "  jitter: 0.02\n", "  jitter: 0.02\n  convergence: {constants: k.yaml}\n"))
    scn = load_scenario(tmp_path / "s.yaml")
    assert scn.workload.convergence.constants.k_s == 0.0


@pytest.mark.parametrize("value,words", [
    ("missing.yaml", "not found"),
    (5, "mapping of constants"),
    ({"k_x": 1.0}, "unknown convergence constant 'k_x'"),
    ({"k_s": -1}, "must be a number >= 0"),
])
def test_bad_constants_name_the_field(value, words):
    with pytest.raises(InputError) as err:
        load_profile("resnet50", {"constants": value})
    msg = str(err.value)
    assert "workload.convergence.constants" in msg and words in msg


def test_analytic_for_emulation_predicts_an_emulated_point():
    from clustersim.sim.convfit import _spec, analytic_for_emulation, base_scenario
    from clustersim.sim.emulate import run_emulation

    scn = base_scenario("teacher_student", 4, "async_sgd")
    alg = _spec("async_sgd", {})
    em = run_emulation(scn, alg, 4, 0)
    stale = [v for a in em.run.actors for v in a.records.get("staleness", [])]
    res = analytic_for_emulation(scn, alg, 4, em.result, staleness=stale)
    assert res is not None and math.isfinite(res.steps_to_target)
    # time = steps x the emulated run's own time per server update (exact by construction)
    per_update = em.result.time_to_target / em.result.updates_to_target
    assert res.time_to_target == pytest.approx(res.steps_to_target * per_update, rel=1e-9)
    # the prediction itself: the analytic steps within 1.5x of the emulated updates, the
    # held-out error band docs/convergence.md states (audit I M3: only the identity above
    # was checked, which a wrong prediction passes)
    assert abs(math.log(res.steps_to_target / em.result.updates_to_target)) < math.log(1.5)


@pytest.mark.parametrize("warnings, bad", [('"just a string"', "'just a string'"),
                                           ("{a: 1}", "{'a': 1}"), ("[ok, [x, y]]", "['x', 'y']")])
def test_a_constants_file_with_malformed_warnings_is_refused(tmp_path, capsys, warnings, bad):
    """audit C M4: a string or a mapping had been dropped without a word, other items
    printed as Python values."""
    (tmp_path / "k.yaml").write_text(f"constants: {{k_s: 1.0}}\nwarnings: {warnings}\n")
    scn = tmp_path / "s.yaml"
    scn.write_text("name: s\nplatform: crossbar16\nworkload: {model: resnet18, "
                   "batch_per_worker: 32, convergence: {constants: k.yaml}}\n"
                   "algorithm: {name: async_sgd}\nsweep: {workers: [4]}\n")
    assert main(["predict", str(scn), "--no-band", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "workload.convergence.constants" in err
    assert f"'warnings' must be a list of texts (as calibrate --emulation writes it), not {bad}" \
        in err, err


def test_many_warnings_are_cut_to_three(tmp_path, capsys):
    (tmp_path / "k.yaml").write_text("constants: {k_s: 1.0}\nwarnings: [" +
                                     ", ".join(f"w{i}" for i in range(50)) + "]\n")
    scn = tmp_path / "s.yaml"
    scn.write_text("name: s\nplatform: crossbar16\nworkload: {model: resnet18, "
                   "batch_per_worker: 32, convergence: {constants: k.yaml}}\n"
                   "algorithm: {name: async_sgd}\nsweep: {workers: [4]}\n")
    assert main(["predict", str(scn), "--no-band"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(its file warns: w0; w1; w2; and 47 more)" in text
