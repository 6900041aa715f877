"""Options and inputs that audit 22 found accepted and dropped, or refused without naming
what to change: each is now refused in one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.cli import main

SCN = ("name: ft_ps\nplatform: fattree_k16\nworkload: {model: resnet50, batch_per_worker: 32}\n"
       "algorithm: {name: async_sgd, shards: 4}\nsweep: {workers: [4]}\n")


def _err(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("cmd", ["whatif", "sweep"])
def test_cache_and_no_cache_together_are_refused(cmd: str, tmp_path: Path, capsys) -> None:
    """``--cache FILE --no-cache`` dropped --cache without a word."""
    out = tmp_path / "o"
    extra = ["-o", str(out)] if cmd == "whatif" else ["--out", str(out)]
    err = _err([cmd, "theano_mpi_alexnet", "--cache", str(tmp_path / "c.sqlite"),
                "--no-cache", *extra], capsys)
    assert "argument --no-cache: not allowed with argument --cache" in err
    assert not out.exists() and not (tmp_path / "c.sqlite").exists()


def test_jobs_under_mpi_is_refused(tmp_path: Path, capsys) -> None:
    """``sweep --mpi -j 4`` ran with the MPI ranks and dropped -j."""
    out = tmp_path / "o"
    err = _err(["sweep", "theano_mpi_alexnet", "--mpi", "-j", "2", "--out", str(out)], capsys)
    assert "-j: is for local processes or LocalCluster workers; under --mpi" in err
    assert not out.exists()


def test_run_workers_zero_names_the_option(capsys) -> None:
    """``run --real --workers 0`` said "workers: workers must be ...", naming no option."""
    err = _err(["run", "--real", "real_bsp_mlp", "--workers", "0"], capsys)
    assert "argument --workers: must be a whole number >= 1, not '0'" in err


def test_a_dotted_index_into_an_absent_list_says_so(tmp_path: Path, capsys) -> None:
    """``--set compare.1.label=X`` on a scenario without ``compare`` had made a mapping
    {'1': {label: X}} and been refused as "compare[0].name: is required"; a mapping of
    indexes written in a file is refused the same way, at its line."""
    scn = tmp_path / "s.yaml"
    scn.write_text(SCN)
    err = _err(["validate", str(scn), "--set", "compare.1.label=X"], capsys)
    assert "compare: must be a list [a, b, ...], not a mapping of the index(es) 1" in err
    assert "give the whole list, like --set 'compare=[...]'" in err
    scn.write_text(SCN + "compare: {0: {name: bsp}}\n")
    err = _err(["validate", str(scn)], capsys)
    assert "s.yaml:6, compare: must be a list [a, b, ...], not a mapping of the index(es) 0" \
        in err


def test_a_bare_rate_inside_a_set_value_names_its_field(tmp_path: Path, capsys) -> None:
    """``--set 'catalog={links: {x: {bandwidth: 1.4}}}'`` was refused at ``catalog`` alone;
    the field inside the value is named, as in a file."""
    scn = tmp_path / "s.yaml"
    scn.write_text(SCN)
    err = _err(["validate", str(scn), "--set",
                "catalog={links: {x: {bandwidth: 1.4, latency: 1 us}}}"], capsys)
    assert "), catalog.links.x.bandwidth: the value" in err and "needs its unit" in err
    err = _err(["validate", str(scn), "--set", "workload.input={bandwidth: 1.4}"], capsys)
    assert "), workload.input.bandwidth: the value" in err


@pytest.mark.parametrize("argv", [
    ["whatif", "allreduce_crossbar16", "-o", "{out}"],
    ["predict", "theano_mpi_alexnet", "--plot", "{out}", "-q"],
    ["routes", "fabrics_resnet50", "--plot", "{out}"],
])
def test_a_chart_without_plotly_is_refused_before_simulating(argv: list[str], tmp_path: Path,
                                                             capsys, monkeypatch) -> None:
    """Plotly is the ``charts`` extra: without it ``whatif`` and ``--plot`` had simulated
    everything and then died with a ModuleNotFoundError traceback, exit 1."""
    monkeypatch.setitem(__import__("sys").modules, "plotly", None)
    out = tmp_path / "page.html"
    err = _err([a.replace("{out}", str(out)) for a in argv], capsys)
    assert "writes a Plotly page and Plotly is not installed: pip install " \
           "'clustersim[charts]'" in err
    assert not out.exists()
