"""The figures the docs quote from a command are what that command prints today.

Why: two audits of the docs (2026-11-29) found eight figures that later changes to the
engine had moved - a staleness column 41 % off, a time to target 34 % off, a flow/queue gap
quoted as 45 % where it is now 40 % (and the switch note saying 45 % with it).  Each test
here runs the command a passage names, formats its figures as the passage writes them and
checks that the passage says exactly that, so a change that moves one fails here until the
doc is re-measured.  Whitespace is normalised (the docs wrap their lines).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from clustersim.cli import main
from clustersim.scenario.schema import PROJECT_ROOT
from clustersim.units import format_duration

DOCS = Path(PROJECT_ROOT) / "docs"


def _doc(name: str) -> str:
    return " ".join((DOCS / name).read_text(encoding="utf-8").split())


def _predict(tmp_path: Path, scenario: str, *sets: str) -> dict:
    out = tmp_path / "p.json"
    argv = ["predict", scenario, "--no-band", "-q", "--json", str(out)]
    for s in sets:
        argv += ["--set", s]
    assert main(argv) == 0
    return json.loads(out.read_text())["algorithms"]


def test_the_heterogeneous_table_and_its_times_to_target(tmp_path: Path) -> None:
    """docs/algorithms.md, hetero_hybrid: the table's rows and the times to target below it,
    from the command the doc names (12 iterations, 2 warm-up)."""
    algs = _predict(tmp_path, "hetero_hybrid", "run.iterations=12", "run.warmup=2")
    doc = _doc("algorithms.md")
    pt = {title: pts[-1] for title, pts in algs.items()}
    names = {"hybrid k=4": "hybrid k=4", "hybrid": "hybrid",
             "all-async ps x4": "all-async ps ×4 shards", "all-async ps": "all-async ps",
             "all-sync bsp": "all-sync bsp"}
    assert set(pt) == set(names)
    for title, shown in names.items():
        p = pt[title]
        stale = p["staleness_mean"]
        row = (f"| {shown} | {p['throughput']:,.0f} | {p['worker_utilization']:.2f} | "
               f"{p['wait'] * 1e3:.0f} ms | {'0' if stale is None else f'{stale:.1f}'} |")
        assert row in doc, row
    k4, ps4, bsp = pt["hybrid k=4"], pt["all-async ps x4"], pt["all-sync bsp"]
    ranked = sorted(pt, key=lambda t: pt[t]["time_to_target"])
    assert ranked[0] == "all-async ps x4" and ranked[-1] == "hybrid k=4"
    said = (f"the four-shard server is first to the target ({format_duration(ps4['time_to_target'])}), "
            f"BSP at {format_duration(bsp['time_to_target'])} and hybrid k=4, fastest in samples/s, "
            f"last at {format_duration(k4['time_to_target'])} "
            f"({k4['statistical_efficiency']:.1%} statistical efficiency: its pushes are 4 × 16 "
            f"× 64 samples, its staleness {k4['staleness_mean']:.1f})")
    assert said in doc, said


def test_the_flow_and_queue_parameter_server_case(tmp_path: Path) -> None:
    """docs/fidelity.md's fattree_k16 case (and the switch note's percentage): an Async SGD
    server with 4 shards at 60 workers as flows and as queues, and the ``auto`` sweep's
    jump between 60 and 61 workers."""
    scn = tmp_path / "ft.yaml"
    scn.write_text("name: ft_ps\nplatform: fattree_k16\n"
                   "workload: {model: resnet50, batch_per_worker: 32}\n"
                   "algorithm: {name: async_sgd, shards: 4}\n"
                   "sweep: {workers: [60, 61], scaling: weak}\n", encoding="utf-8")
    auto = _predict(tmp_path, str(scn))["async_sgd"]
    queues = _predict(tmp_path, str(scn), "sweep.workers=[60]", "run.fidelity=analytic")
    flow_it = auto[0]["iteration_time"]  # 60 workers + 4 shards = 64 actors: flows
    queue_it = queues["async_sgd"][0]["iteration_time"]
    gap = round(100 * (queue_it / flow_it - 1))
    said = (f"the iteration is {flow_it * 1e3:,.0f} ms at 60 workers as flows and "
            f"{queue_it * 1e3:,.0f} ms as queues ({gap} %;")
    doc = _doc("fidelity.md")
    assert said in doc, said
    jump = (f"jumps from {auto[0]['throughput']:,.0f} to {auto[1]['throughput']:,.0f} samples/s "
            f"(efficiency {auto[1]['efficiency']:.0%}".replace("%", " %"))
    assert jump in doc, jump
    # the switch note under such a sweep quotes the same gap
    from clustersim.report import notes
    from clustersim.scenario.schema import load_scenario

    s = load_scenario(str(scn))
    note = notes.switch_note(s, s.algorithms[0], [SimpleNamespace(workers=w) for w in (60, 61)])
    assert note is not None and f"can differ by {-gap} %" in note, note
    assert f"part by {-gap} %" in " ".join((notes.__doc__ or "").split())


@pytest.mark.parametrize("tau", [1, 2])
def test_the_tau_sweep_saturation_lines(tmp_path: Path, tau: int,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """docs/exploration.md: the saturation lines of the tau sweep, as its command prints
    them."""
    argv = ["sweep", "knl_unsaturated", "--set",
            "algorithm={name: async_easgd, tau: 1, label: Async EASGD}", "--set", "compare=[]",
            "--set", "sweep.workers=[17, 68]", "--set", "sweep.axes={algorithm.tau: [1, 2]}",
            "--out", str(tmp_path / "tau"), "--no-cache"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines()
                if f"algorithm.tau={tau}, seed=0: master saturates" in ln)
    said = " ".join(line.split())
    assert said in _doc("exploration.md"), said


def test_the_headline_band_of_the_main_job(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/uncertainty.md's block: the README main job's one-at-a-time band (printed at
    the top of ``predict knl_4253``), every line as printed; and its headline sentence."""
    import re

    doc = (DOCS / "uncertainty.md").read_text(encoding="utf-8")
    block = doc[doc.index("```\nSync EASGD at 4,253 workers"):]
    block = block[4:block.index("\n```", 4)]
    assert main(["predict", "knl_4253", "--set", "compare=[]"]) == 0
    out = capsys.readouterr().out
    printed = " ".join(out.split())  # the doc shows it unwrapped, the test prints at 80
    for line in block.splitlines():
        assert " ".join(line.split()) in printed, line
    eff = re.search(r"efficiency ([\d.]+)%: ([\d.]+)% to ([\d.]+)%", out)
    assert eff is not None
    said = (f"`scenarios/knl_4253.yaml`'s {eff[1]} % Sync EASGD efficiency at 4,253 cores "
            f"moves between {eff[2]} % and {eff[3]} %")
    assert said in _doc("uncertainty.md"), said


def test_the_small_emulation_fit(tmp_path: Path, capsys) -> None:
    """docs/convergence.md, ``calibrate --emulation --grid small``: the constants, their
    intervals, the rms and the held-out error it quotes (with the default tasks)."""
    assert main(["calibrate", "--emulation", "--grid", "small",
                 "--out", str(tmp_path / "k.yaml")]) == 0
    out = capsys.readouterr().out
    lines = {ln.split(" = ")[0].strip(): ln.strip() for ln in out.splitlines() if " = " in ln}
    doc = _doc("convergence.md")
    for name in ("k_s", "k_d", "k_e", "k_g"):
        value, interval = lines[name].split(" = ")[1].split("  ")[:2]
        assert f"`{name} = {value} {interval}`" in doc, (name, value, interval)
    assert lines["k_m"].startswith("k_m = 1  kept") and "`k_m = 1 kept`" in doc
    rms = next(ln for ln in out.splitlines() if "log-residual rms" in ln).split()[-1]
    held = next(ln for ln in out.splitlines() if "median |error|" in ln).split()[-1]
    assert f"a log-residual rms of {rms} and a held-out median |error| of {held}:" in doc
