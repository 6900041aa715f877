"""``clustersim routes``: tables, JSON, the heat map, and one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest

from clustersim.cli import main

SCENARIO = """\
name: fabric16
platform:
  topology: leaf_spine
  leaves: 4
  spines: 2
  hosts_per_leaf: 4
  cables: 2
  device: k80
  host_link: eth10g
  uplink: eth10g
  routing: {policy: ecmp, seed: 0}
network: {overhead: 0 us, efficiency: 1.0}
benchmark: {op: alltoall, algorithms: [pairwise], ranks: [16], sizes: [1 MiB]}
"""


@pytest.fixture
def scenario(tmp_path):
    f = tmp_path / "fabric16.yaml"
    f.write_text(SCENARIO)
    return f


def test_routes_prints_transfers_and_links(scenario, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["routes", str(scenario), "--step", "4"]) == 0
    out = capsys.readouterr().out
    assert "routing ecmp; alltoall by pairwise on 16 ranks, 1 MiB, step 4 of 15" in out
    assert "h0 > leaf0 >#1 spine0 > leaf1 > h4" in out  # the cable a route takes
    assert "busiest link 3 flow(s)" in out  # hashed ECMP piles 3 flows on a cable
    assert "utilisation" in out and "1.00" in out


def test_routes_dmodk_json_seeds_and_plot(scenario, tmp_path, capsys):
    js, html = tmp_path / "r.json", tmp_path / "r.html"
    assert main(["routes", str(scenario), "--step", "4", "--routing", "dmodk", "--seeds", "3",
                 "--json", str(js), "--plot", str(html), "-q"]) == 0
    assert capsys.readouterr().out == ""
    res = json.loads(js.read_text())
    assert res["routing"] == {"policy": "dmodk", "seed": 0}
    assert res["max_flows"] == 1 and len(res["transfers"]) == 16
    assert res["links"][0]["utilisation"] == 1.0
    assert {"link", "from", "to", "flows", "bytes", "capacity", "utilisation"} <= set(
        res["links"][0])
    assert [s["seed"] for s in res["seeds"]] == [0, 1, 2]
    assert res["spread"]["max_over_min"] == pytest.approx(1.0)  # d-mod-k ignores the seed
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page
    assert '"heatmap"' in page


def test_ecmp_seeds_show_a_spread(scenario, tmp_path):
    js = tmp_path / "r.json"
    assert main(["routes", str(scenario), "--step", "4", "--seeds", "8", "--json", str(js),
                 "-q"]) == 0
    res = json.loads(js.read_text())
    assert res["spread"]["max_over_min"] > 1.0
    assert len({s["max_flows"] for s in res["seeds"]}) > 1


@pytest.mark.parametrize("argv, message", [
    (["--routing", "fancy"], "error: --routing: unknown routing policy 'fancy'"),
    (["--routing", "valiant"], "error: --routing: routing policy 'valiant' applies to dragonfly"),
    (["--seed", "-1"], "error: --seed: seed must be an integer from 0"),
    (["--step", "99"], "error: --step: must be from 1 to 15"),
    (["--ranks", "17"], "error: --ranks: must be from 2 to 16"),
    (["--op", "allreduc"], "error: --op: unknown collective 'allreduc'"),
    (["--size", "lots"], "error: --size:"),
])
def test_bad_options_exit_2_with_one_line(scenario, capsys, argv, message):
    assert main(["routes", str(scenario), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_ugal_routes_on_a_dragonfly(tmp_path, capsys):
    f = tmp_path / "df.yaml"
    f.write_text("name: df\nplatform: {topology: dragonfly, groups: 5, routers_per_group: 4,\n"
                 "  hosts_per_router: 2, device: k80, host_link: eth10g, local_link: eth10g,\n"
                 "  global_link: eth10g, routing: ugal}\n"
                 "benchmark: {op: alltoall, algorithms: [pairwise], ranks: [40], "
                 "sizes: [1 MiB]}\n")
    js = tmp_path / "r.json"
    assert main(["routes", str(f), "--step", "8", "--json", str(js), "-q"]) == 0
    res = json.loads(js.read_text())
    hops = sorted({len(t["links"]) for t in res["transfers"]})
    assert res["routing"]["policy"] == "ugal" and max(hops) > 5  # some flows left minimal


def test_list_routing_names_every_policy(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["list", "routing"]) == 0
    out = capsys.readouterr().out
    for policy in ("ecmp", "minimal", "dmodk", "smodk", "valiant", "ugal"):
        assert policy in out
