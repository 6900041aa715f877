"""``clustersim calibrate --convergence LOG.csv`` and the norm log a real run writes.

* the command on a synthetic log (:func:`test_noise_scale.synthetic_norms`): the snippet's
  schedule is the estimator's, the file is the same bytes twice (``SOURCE_DATE_EPOCH``);
* bad logs: exit 2 with one message naming the file, the line, the column and what it allows;
* BSP with the proxy model records the two squared norms per step and worker; simulating
  with them keeps the timing; the records become the log (:mod:`realrun.gradnorms`);
* on real MPI (marked ``mpi``, 2 ranks): ``run --real --math`` writes ``grad_norms.csv``, its
  norms are those of BSP driven by hand in lockstep, bit for bit, and ``calibrate --convergence`` on it gives a
  positive finite noise scale.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from _procs import no_strays
from test_noise_scale import synthetic_norms

from clustersim.algorithms.base import ActorSpec
from clustersim.algorithms.ops import Collective, Compute, Record
from clustersim.algorithms.proxy import make_math
from clustersim.cli import main
from clustersim.convergence.noise_scale import (
    estimate,
    format_log,
    geometric_schedule,
    read_log,
    windows,
)
from clustersim.sim.costs import CostModel
from clustersim.sim.engine import Engine
from clustersim.trace import TraceEvent
from realrun.gradnorms import norm_rows, write_norm_log
from realrun.train import prepare

ROOT = Path(__file__).resolve().parents[1]
BSP = ROOT / "scenarios" / "real_bsp_mlp.yaml"
HEADER = "step,batch_small,batch_big,sq_norm_small,sq_norm_big"


def _write_synthetic(path: Path, n: int = 2000) -> None:
    p = np.arange(n) / (n - 1)
    log = synthetic_norms(0, 100.0 / (50.0 * 8.0 ** p), np.full(n, 100.0))
    path.write_text(format_log(zip(log.step, log.batch_small, log.batch_big,
                                   log.sq_norm_small, log.sq_norm_big)))


def test_the_command_writes_the_estimators_schedule(tmp_path: Path, capsys,
                                                    monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    log_path, out = tmp_path / "norms.csv", tmp_path / "gns.yaml"
    _write_synthetic(log_path)
    assert main(["calibrate", "--convergence", str(log_path), "--out", str(out),
                 "--json", str(tmp_path / "gns.json")]) == 0
    table = capsys.readouterr().out
    assert "whole log" in table and "geometric schedule" in table
    snippet = yaml.safe_load(out.read_text())
    log = read_log(log_path)
    fr, to = geometric_schedule(windows(log, 4))
    assert snippet == {"noise_scale": {"from": float(f"{fr:.3g}"), "to": float(f"{to:.3g}")}}
    assert 35 < fr < 70 and 280 < to < 560  # truth 50 -> 400 (2,000 steps: ~15% se)
    assert "2023-11-14" in out.read_text() and str(log_path) in out.read_text()
    saved = json.loads((tmp_path / "gns.json").read_text())
    assert saved["overall"]["b_simple"] == estimate(log).b_simple
    assert len(saved["windows"]) == 4 and saved["interval"] == "Fieller"
    first = out.read_bytes()
    assert main(["calibrate", "--convergence", str(log_path), "--out", str(out), "-q"]) == 0
    assert out.read_bytes() == first
    # without --out the snippet is the whole of stdout (the table goes to stderr)
    assert main(["calibrate", "--convergence", str(log_path), "--windows", "1"]) == 0
    got = capsys.readouterr()
    assert yaml.safe_load(got.out) == {
        "noise_scale": float(f"{estimate(log).b_simple:.3g}")}
    assert "whole log" in got.err


BAD_LOGS = [
    # (file text, line, column, words the message must hold)
    ("", 1, None, ["empty file", HEADER.replace(",", ", ")]),
    ("# only a comment\n\n", 1, None, ["empty file"]),
    (HEADER + "\n", 1, None, ["no data rows"]),
    ("step,batch_small,batch_big,sq_norm_small\n0,8,32,1.0\n", 1, None,
     ["missing column 'sq_norm_big'", "required:", "found: step, batch_small"]),
    (HEADER + "\n0,8,32,1.5,1.0\n1,8,32,abc,1.0\n", 3, "sq_norm_small",
     ["'abc' is not a finite number", "allowed:", ">= 0"]),
    (HEADER + "\n0,8,32,1.5,nan\n", 2, "sq_norm_big", ["'nan' is not a finite number"]),
    (HEADER + "\n0,8,32,1.5,1.0\n1,32,32,1.5,1.0\n", 3, "batch_big",
     ["32 is not larger than batch_small 32", "allowed: a number > batch_small"]),
    (HEADER + "\n0,8,4,1.5,1.0\n", 2, "batch_big", ["not larger than batch_small"]),
    (HEADER + "\n0,0,4,1.5,1.0\n", 2, "batch_small", ["0 is not > 0"]),
    (HEADER + "\n0,8,32,-1.5,1.0\n", 2, "sq_norm_small", ["-1.5 is negative"]),
    (HEADER + "\n3,8,32,1.5,1.0\n2,8,32,1.5,1.0\n", 3, "step", ["2 does not follow step 3"]),
    (HEADER + "\n0.5,8,32,1.5,1.0\n", 2, "step", ["0.5 is not a whole number"]),
    (HEADER + "\n0,8,32,1.5\n", 2, None, ["4 fields, the header has 5"]),
]


@pytest.mark.parametrize("text,line,column,words", BAD_LOGS)
def test_bad_logs_exit_2_naming_file_line_and_column(text: str, line: int, column: str | None,
                                                     words: list[str], tmp_path: Path,
                                                     capsys) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    out = tmp_path / "gns.yaml"
    assert main(["calibrate", "--convergence", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:{line}") and err.count("\n") == 1, err
    assert "Traceback" not in err
    if column is not None:
        assert f":{line}, {column}: " in err
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()


def test_bad_command_lines_exit_2(tmp_path: Path, capsys) -> None:
    path = tmp_path / "norms.csv"
    _write_synthetic(path, n=40)
    cases = [
        (["--convergence", str(tmp_path / "missing.csv")], "norm log not found"),
        (["--convergence", str(path), "--real"], "without --real or TRACES"),
        (["--convergence", str(path), "--windows", "0"], "--windows must be >= 1"),
        (["--convergence", str(path), "--windows", "30"],
         "30 windows leave window 2 with 1 step(s) of the 40 logged"),
        (["--convergence", str(path), "--confidence", "95"], "between 0 and 1"),
        (["--convergence", str(path), "--out", str(tmp_path)], "is a directory"),
    ]
    for argv, words in cases:
        assert main(["calibrate", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, (argv, err)


def test_a_log_without_signal_is_refused(tmp_path: Path, capsys) -> None:
    """Big-batch norms above the small ones on average: tr(Sigma) < 0, no noise scale."""
    path = tmp_path / "flat.csv"
    path.write_text(HEADER + "\n" + "".join(f"{i},8,32,1.0,{1.0 + (i % 3) * 0.1}\n"
                                            for i in range(20)))
    assert main(["calibrate", "--convergence", str(path)]) == 2
    assert "does not determine the noise scale" in capsys.readouterr().err


# -- the norms BSP records -------------------------------------------------------------------------
def _simulate_bsp(iterations: int, math_on: bool):
    setup = prepare(BSP, workers=2, iterations=iterations)
    scn, job, actors = setup.scenario, setup.job, setup.actors
    if math_on:
        maths = [make_math(job, a.rank, a.role, a.index) for a in actors]
        actors = [ActorSpec(a.rank, a.role, a.index,
                            lambda ctx, a=a: a.body(replace(ctx, math=maths[a.rank])),
                            a.colocate) for a in actors]
    eng = Engine(scn.platform, job, actors, setup.placement,
                 CostModel(scn, setup.batch, scn.run.seed), params=scn.network,
                 fidelity=scn.run.fidelity, trace=True, warmup=scn.run.warmup)
    return eng.run()


def test_bsp_records_the_norms_and_simulating_them_keeps_the_timing() -> None:
    plain, mathy = _simulate_bsp(12, False), _simulate_bsp(12, True)
    assert mathy.makespan == plain.makespan
    assert [e for e in mathy.events if e.kind != "record"] == \
        [e for e in plain.events if e.kind != "record"]
    local = [a.records["grad_sq_local"] for a in mathy.actors]
    mean = [a.records["grad_sq_mean"] for a in mathy.actors]
    assert all(len(x) == 12 for x in local + mean)
    assert mean[0] == mean[1] and local[0] != local[1]  # one all-reduced gradient, two local
    rows = norm_rows(mathy.events, workers=2, batch=32)
    assert [r[0] for r in rows] == list(range(12))
    assert [r[3] for r in rows] == [(a + b) / 2 for a, b in zip(*local)]
    assert [r[4] for r in rows] == mean[0]


def _lockstep_norms(iterations: int) -> list[tuple[int, int, int, float, float]]:
    """BSP with math on 2 workers driven by hand (blocking all-reduces answered with the sum,
    as MPI does): the norm log's rows from the workers' records - what a real run must give."""
    setup = prepare(BSP, workers=2, iterations=iterations)
    job = setup.job
    gens = [a.start(job, make_math(job, a.rank, a.role, a.index)) for a in setup.actors]
    values: list = [None, None]
    it = [0, 0]  # each worker's iteration, for its records
    events: list[TraceEvent] = []
    live = [True, True]
    while any(live):
        at: dict[int, Collective] = {}
        for i, gen in enumerate(gens):
            while live[i]:
                try:
                    op = gen.send(values[i])
                except StopIteration:
                    live[i] = False
                    break
                values[i] = None
                if isinstance(op, Compute):
                    values[i] = op.fn(op.data) if op.fn is not None else None
                elif isinstance(op, Record):
                    if op.key == "iteration":
                        it[i] = int(op.value)
                    events.append(TraceEvent(i, "worker", "record", 0.0, 0.0, op.key,
                                             iteration=it[i], value=op.value))
                elif isinstance(op, Collective):
                    assert op.blocking
                    at[i] = op
                    break
        if at:
            assert len(at) == 2
            total = np.asarray(at[0].data) + np.asarray(at[1].data)
            values = [total.copy(), total.copy()]
    return norm_rows(events, workers=2, batch=32)



def test_lockstep_bsp_norms_carry_the_noise() -> None:
    """The local norms exceed the all-reduced one on average: E|G_small|^2 - E|G_big|^2 =
    tr(Sigma) (1/32 - 1/64) > 0; and the big-batch norm is that of the mean gradient (the
    sum over 2 workers, halved)."""
    rows = _lockstep_norms(30)
    assert [r[0] for r in rows] == list(range(30))
    small, big = np.array([r[3] for r in rows]), np.array([r[4] for r in rows])
    assert np.mean(small) > np.mean(big) > 0
    assert np.all(big <= small * 2)  # |(a+b)/2|^2 <= (|a|^2 + |b|^2)/2 = small


def test_the_log_is_written_from_complete_steps_only(tmp_path: Path) -> None:
    def rec(actor: int, it: int, label: str, value: float) -> TraceEvent:
        return TraceEvent(actor, "worker", "record", 0.0, 0.0, label, iteration=it,
                          value=value)

    events = [rec(0, 0, "grad_sq_local", 4.0), rec(1, 0, "grad_sq_local", 2.0),
              rec(0, 0, "grad_sq_mean", 1.0), rec(1, 0, "grad_sq_mean", 1.0),
              rec(0, 1, "grad_sq_local", 5.0), rec(0, 1, "grad_sq_mean", 1.0),  # cut short
              rec(0, 0, "loss", 2.0)]
    assert norm_rows(events, workers=2, batch=16) == [(0, 16, 32, 3.0, 1.0)]
    head = {"workers": 2, "math_batch": 16, "scenario": "s", "algorithm": "bsp"}
    path = write_norm_log(tmp_path, [head], events)
    assert path == tmp_path / "grad_norms.csv"
    log = read_log(path)
    assert (log.step.tolist(), log.sq_norm_small.tolist()) == ([0.0], [3.0])
    assert write_norm_log(tmp_path, [{**head, "workers": 1}], events) is None
    assert write_norm_log(tmp_path, [{**head, "math_batch": None}], events) is None


# -- real MPI --------------------------------------------------------------------------------------
@pytest.mark.mpi
def test_a_real_run_writes_the_log_and_calibrate_reads_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["run", "--real", str(BSP), "--math", "--iterations", "40", "--np", "2",
                 "--out", str(out), "--timeout", "120", "-q"]) == 0
    log = read_log(out / "grad_norms.csv")
    assert log.step.tolist() == list(range(40))
    assert set(log.batch_small) == {32.0} and set(log.batch_big) == {64.0}
    # MPI's fp32 sum of two gradients is the hand-driven one's: the same norms, bit for bit
    sim = _lockstep_norms(40)
    assert log.sq_norm_small.tolist() == [r[3] for r in sim]
    assert log.sq_norm_big.tolist() == [r[4] for r in sim]
    gns = tmp_path / "gns.json"
    assert main(["calibrate", "--convergence", str(out / "grad_norms.csv"), "--windows", "2",
                 "--out", str(tmp_path / "gns.yaml"), "--json", str(gns), "-q"]) == 0
    overall = json.loads(gns.read_text())["overall"]
    assert overall["b_simple"] > 0 and math.isfinite(overall["b_simple"])
    assert overall["grad_sq"] > 0 and overall["trace"] > 0
    assert "noise_scale:" in (tmp_path / "gns.yaml").read_text()
    no_strays(out)


def test_emulation_beside_a_log_is_refused_not_dropped(tmp_path: Path, capsys) -> None:
    """``--convergence LOG --emulation`` had fitted the log and dropped --emulation without
    a word (audit 22); the two fit different things, so the pair is refused."""
    log_path = tmp_path / "grad_norms.csv"
    _write_synthetic(log_path)
    assert main(["calibrate", "--convergence", str(log_path), "--emulation", "-q"]) == 2
    assert "give it without --real, TRACES or --convergence" in capsys.readouterr().err
