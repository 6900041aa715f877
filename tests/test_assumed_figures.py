"""Assumed catalog figures (catalog ``assumed:``): parsed and checked, and named by predict,
validate and --json exactly when the scenario simulates with them - not when the platform
does not use the class or transport, the scenario sets its own figure, transports are off,
a ``like:`` entry gives the figure itself, or a calibration replaced it."""

from __future__ import annotations

import json

import pytest

from clustersim.catalog import builtin_catalog
from clustersim.cli import main
from clustersim.errors import InputError
from clustersim.scenario.assumed import assumed_figures, assumed_line
from clustersim.scenario.schema import parse_scenario

# a private catalog, so that the tests do not hang on which shipped figures are assumed today
CATALOG = {
    "transports": {"t_guess": {"efficiency": 0.8, "overhead": "3 us",
                               "assumed": ["overhead", "efficiency"]},
                   "t_known": {"efficiency": 0.9, "overhead": "1 us"}},
    "links": {"l_guess": {"bandwidth": "10 GB/s", "latency": "0.3 us", "transport": "t_guess",
                          "assumed": ["latency"]},
              "l_known": {"bandwidth": "10 GB/s", "latency": "0.2 us",
                          "transport": "t_known"}},
}


def _raw(link="l_guess", network=None, catalog=None):
    raw = {
        "catalog": catalog or CATALOG,
        "platform": {"topology": "explicit",
                     "nodes": [{"name": "a", "kind": "device", "device": "v100"},
                               {"name": "b", "kind": "device", "device": "v100"}],
                     "links": [{"between": ["a", "b"], "link": link}]},
        "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [2],
                      "sizes": ["1 MB"]},
    }
    if network is not None:
        raw["network"] = network
    return raw


def _names(scn):
    return [(f.kind, f.entry, f.field) for f in assumed_figures(scn)]


def test_used_assumed_figures_are_named_links_first():
    scn = parse_scenario(_raw())
    assert _names(scn) == [("link", "l_guess", "latency"),
                           ("transport", "t_guess", "efficiency"),
                           ("transport", "t_guess", "overhead")]
    figs = assumed_figures(scn)
    assert figs[0].value == pytest.approx(0.3e-6) and figs[1].value == 0.8
    line = assumed_line(figs)
    assert line.startswith("assumed catalog figures")
    assert "l_guess hop latency 300 ns" in line and "t_guess overhead 3 us" in line
    assert "t_guess efficiency 0.8" in line


def test_a_platform_of_measured_figures_names_none():
    scn = parse_scenario(_raw(link="l_known"))
    assert assumed_figures(scn) == [] and assumed_line([]) is None


def test_the_scenarios_own_figures_replace_the_assumed_ones():
    assert _names(parse_scenario(_raw(network={"overhead": "2 us"}))) == [
        ("link", "l_guess", "latency"), ("transport", "t_guess", "efficiency")]
    assert _names(parse_scenario(_raw(network={"efficiency": 0.7, "overhead": "2 us"}))) == [
        ("link", "l_guess", "latency")]
    assert _names(parse_scenario(_raw(network={"transports": False}))) == [
        ("link", "l_guess", "latency")]


def test_a_like_entry_that_gives_the_figure_is_not_assumed():
    base = builtin_catalog().extended(CATALOG)
    mine = base.extended({"links": {"l_mine": {"like": "l_guess", "latency": "0.25 us"},
                                    "l_copy": {"like": "l_guess"}},
                          "transports": {"t_mine": {"like": "t_guess", "overhead": "2 us"},
                                         "t_said": {"like": "t_guess", "overhead": "2 us",
                                                    "assumed": ["overhead"]}}})
    assert mine.link("l_mine").assumed == () and mine.link("l_copy").assumed == ("latency",)
    assert mine.transport("t_mine").assumed == ("efficiency",)
    assert mine.transport("t_said").assumed == ("overhead",)  # said so: kept


@pytest.mark.parametrize("bad", [["speed"], "overheads", [1], {"overhead": True}])
def test_assumed_must_name_the_entrys_figures(bad):
    cat = {"transports": {"t_bad": {"efficiency": 0.8, "overhead": "3 us", "assumed": bad}}}
    with pytest.raises(InputError) as err:
        parse_scenario(_raw(link="l_known", catalog={**CATALOG, **cat}))
    assert "efficiency, overhead, inline, dma_read" in str(err.value)
    assert "assumed" in str(err.value)


def test_shipped_assumed_fields_name_real_figures():
    cat = builtin_catalog()
    for spec in (*cat.links.values(), *cat.transports.values()):
        for f in spec.assumed:
            assert getattr(spec, f) is not None, (spec.name, f)
    # the catalog marks some figures, and every mark is in the entry's prose too
    marked = [s for s in (*cat.links.values(), *cat.transports.values()) if s.assumed]
    assert marked and all("assum" in s.source for s in marked)


def test_predict_validate_and_json_name_them(tmp_path, capsys):
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_raw()))
    assert main(["validate", str(path)]) == 0
    assert "t_guess overhead 3 us" in capsys.readouterr().out
    out = tmp_path / "o.json"
    assert main(["predict", str(path), "--json", str(out)]) == 0
    assert "assumed catalog figures" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert {"kind": "transport", "entry": "t_guess", "field": "overhead",
            "value": pytest.approx(3e-6)} in doc["assumed_figures"]


def test_list_shows_the_assumed_column(capsys):
    assert main(["list", "transports"]) == 0
    assert "assumed" in capsys.readouterr().out


def test_a_calibrated_protocol_table_replaces_the_transports_figures():
    from dataclasses import replace

    from clustersim.network.params import Segment

    scn = parse_scenario(_raw())
    table = (Segment(0.0, 2e-6, 0.9),)
    for cls, left in (("l_known", 3), ("l_guess", 1), ("*", 1)):
        cal = replace(scn, network=replace(scn.network, protocols=((cls, table),)))
        assert len(assumed_figures(cal)) == left, cls


def test_the_whatif_page_lists_them_with_the_assumptions(tmp_path):
    import yaml

    raw = _raw()
    raw.pop("benchmark")
    raw.update({"workload": {"model": "resnet50", "batch_per_worker": 32},
                "algorithm": {"name": "bsp"}, "sweep": {"workers": [2]},
                "run": {"iterations": 2, "warmup": 1}})
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(raw))
    page = tmp_path / "w.html"
    assert main(["whatif", str(path), "-o", str(page), "--no-cache",
                 "--bandwidth", "1,2", "--latency", "1"]) == 0
    assert "t_guess overhead 3 us" in page.read_text()


# -- the route sample (QA 16c LOW-17: a ring of 100,000 hosts took 34 s to validate) --------
def _sample_idx(n):
    from clustersim.scenario.assumed import _SAMPLE

    step = n / _SAMPLE
    return sorted({min(n - 1, int(k * step) + d) for k in range(_SAMPLE) for d in (0, 1)})


def _kinds(plat, routes):
    return {plat.link_kind[lk] for r in routes for lk in r}


@pytest.mark.parametrize("platform", [
    "fattree_k16", "cori_knl_cores", "dgx1_edr8", "supercloud_v100_opa100",
    {"topology": "dragonfly", "groups": 9, "routers_per_group": 4, "hosts_per_router": 2,
     "global_links_per_router": 2, "device": "v100", "host_link": "aries",
     "local_link": "aries_local", "global_link": "aries_global"},
    {"topology": "torus", "dims": [6, 8], "device": "v100", "link": "ib_edr"},
    # machines whose GPUs talk across sockets: the pairs of the sample that cross a QPI
    # link are not on the chain of neighbours (review of 2026-11-29)
    {"topology": "ring", "hosts": 9, "device": "v100", "link": "eth25g",
     "node": {"devices": 8, "layout": "nvlink_mesh", "nics": 1}},
])
def test_routes_of_short_paths_are_every_pair_of_the_sample(platform):
    """Where routes are short (hierarchies, small direct networks) the sample is every pair
    of the sampled devices, as it always was: the same link classes and transports."""
    from clustersim.scenario.assumed import _sample_routes

    raw = {"platform": platform if isinstance(platform, dict) else f"topologies/{platform}.yaml",
           "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [2],
                         "sizes": ["1 MB"]}}
    plat = parse_scenario(raw).platform
    idx = _sample_idx(plat.num_devices)
    every = plat.routes([(a, b) for a in idx for b in idx if a != b])
    assert sorted(map(tuple, _sample_routes(plat))) == sorted(map(tuple, every))


def test_a_ring_of_many_hosts_samples_few_short_routes():
    """A route on a ring is as long as the distance: there the sample is the chain of
    sampled devices, the first to the middle one and each sampled device to the 8 after it
    (both ways) - ~600 routes, most of a few hops - and it finds the link classes of every
    pair of the sample, the socket-to-socket hops inside a machine included."""
    from clustersim.scenario.assumed import _SHORT, _sample_routes

    raw = {"platform": {"topology": "ring", "hosts": 400, "device": "v100",
                        "link": {"bandwidth": "10 Gb/s", "latency": "1 us"},
                        "node": {"devices": 8, "layout": "nvlink_mesh", "nics": 1}},
           "benchmark": {"op": "allreduce", "algorithms": ["ring"], "ranks": [4],
                         "sizes": ["1 MB"]}}
    plat = parse_scenario(raw).platform
    routes = _sample_routes(plat)
    assert max(map(len, routes)) > _SHORT  # the long-route branch
    assert len(routes) < 64 + 32 * 16 * 15
    hosts = plat.num_devices // 8
    long = [r for r in routes if len(r) > _SHORT]
    assert len(long) <= 64 and sum(map(len, routes)) < 4 * hosts + 16 * 16 * 15 * 20
    idx = _sample_idx(plat.num_devices)
    every = plat.routes([(a, b) for a in idx for b in idx if a != b])
    assert _kinds(plat, routes) == _kinds(plat, every) | {"qpi"}
