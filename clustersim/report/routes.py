"""What ``clustersim routes`` prints and draws: transfers with their routes, links with their
load, the spread over hash seeds, and a heat map of link utilisation (offline HTML).

The heat map is a node x node matrix (rows: the node a link leaves, columns: the node it
enters) over the nodes the step's routes touch; a cell is the busiest of the cables between
the two nodes, its hover text lists every cable.  plotly is imported lazily, here only.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from clustersim.report.layout import Col, print_table
from clustersim.units import format_size, format_time

__all__ = ["print_routes", "routes_html", "spread_rows", "route_text"]

_CONFIG = {"displaylogo": False, "responsive": True}


def route_text(nodes: Sequence[str], links: Sequence[str]) -> str:
    """``h0 > leaf0 >#1 spine0 > leaf1 > h4``: nodes, and the cable taken where a pair has
    parallel cables (the ``#k`` of the link's name; the first cable has none)."""
    out = [nodes[0]] if nodes else []
    for node, link in zip(nodes[1:], links):
        tag = link.rpartition("#")[2] if "#" in link else ""
        out.append(f">#{tag} {node}" if tag else f"> {node}")
    return " ".join(out)


def spread_rows(seeds: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Min, median and max of the step time over seeds, and the worst link flow count."""
    times = [s["step_time"] for s in seeds]
    return {"min_s": min(times), "median_s": statistics.median(times), "max_s": max(times),
            "max_over_min": max(times) / min(times) if min(times) > 0 else float("inf"),
            "worst_max_flows": max(s["max_flows"] for s in seeds)}


def print_routes(console: Console, res: Mapping[str, Any], *, rows: int = 20,
                 wide: bool = False) -> None:
    """The summary line, the transfers and the links tables (busiest first)."""
    pol = res["routing"]
    policy = pol["policy"] + (f" (seed {pol['seed']})" if pol["seed"] else "")
    console.print(f"{res['scenario']}: {res['platform']}, routing {policy}; {res['op']} by "
                  f"{res['algorithm']} on {res['ranks']} ranks, {format_size(res['size'])}, "
                  f"step {res['step']} of {res['steps']}")
    links = res["links"]
    console.print(f"{len(res['transfers'])} transfers over {len(links)} links; busiest link "
                  f"{res['max_flows']} flow(s); step time {format_time(res['step_time'])} "
                  f"at flow level (bottleneck drain {format_time(res['bottleneck_s'])})")
    cut = rows if rows > 0 else None
    tr = res["transfers"]
    cols = [Col("#", priority=0), Col("src", priority=1), Col("dst", priority=1),
            Col("bytes", priority=2), Col("hops", priority=2),
            Col("route", justify="left", priority=1)]
    cells = [[str(i), str(t["src"]), str(t["dst"]), format_size(t["bytes"]),
              str(len(t["links"])), escape(route_text(t["nodes"], t["links"]))]
             for i, t in enumerate(tr[:cut])]
    print_table(console, "Transfers", cols, cells, wide=wide)
    if cut is not None and len(tr) > cut:
        console.print(f"... {len(tr) - cut} more transfers (--rows 0 or --json shows all)")
    cols = [Col("link", justify="left", priority=0), Col("kind", justify="left", priority=3),
            Col("flows", priority=1), Col("bytes", priority=2), Col("drain", priority=2),
            Col("utilisation", priority=1)]
    cells = [[escape(x["link"]), escape(x["kind"]), str(x["flows"]), format_size(x["bytes"]),
              format_time(x["drain_s"]), f"{x['utilisation']:.2f}"] for x in links[:cut]]
    print_table(console, "Links, busiest first (utilisation: bytes / capacity, 1 = busiest)",
                cols, cells, wide=wide)
    if cut is not None and len(links) > cut:
        console.print(f"... {len(links) - cut} more links (--rows 0 or --json shows all)")
    if "seeds" in res:
        sp = res["spread"]
        cols = [Col("seed", priority=0), Col("step time", priority=1),
                Col("busiest link flows", priority=1), Col("bottleneck drain", priority=2)]
        cells = [[str(s["seed"]), format_time(s["step_time"]), str(s["max_flows"]),
                  format_time(s["bottleneck_s"])] for s in res["seeds"][:cut]]
        print_table(console, f"Over {len(res['seeds'])} seeds of {pol['policy']}", cols, cells,
                    wide=wide)
        console.print(f"step time: min {format_time(sp['min_s'])}, median "
                      f"{format_time(sp['median_s'])}, max {format_time(sp['max_s'])} "
                      f"(max/min {sp['max_over_min']:.2f})")


def routes_figure(res: Mapping[str, Any]) -> Any:
    """The heat map: utilisation of the busiest cable from each row node to each column."""
    import plotly.graph_objects as go

    from clustersim.report.htmlpage import escape_text as esc

    nodes: list[str] = []
    seen: set[str] = set()
    for t in res["transfers"]:
        for n in t["nodes"]:
            if n not in seen:
                seen.add(n)
                nodes.append(n)
    pos = {n: i for i, n in enumerate(nodes)}
    z: list[list[float | None]] = [[None] * len(nodes) for _ in nodes]
    hover = [[""] * len(nodes) for _ in nodes]
    for x in res["links"]:
        i, j = pos.get(x["from"]), pos.get(x["to"])
        if i is None or j is None:
            continue
        old = z[i][j]
        z[i][j] = x["utilisation"] if old is None else max(old, x["utilisation"])
        hover[i][j] += (f"{esc(x['link'])}: {x['flows']} flow(s), {format_size(x['bytes'])}, "
                        f"utilisation {x['utilisation']:.2f}<br>")
    labels = [esc(n) for n in nodes]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, text=hover, hoverinfo="text",
                               colorscale="YlOrRd", zmin=0, zmax=1,
                               colorbar={"title": "utilisation"}))
    pol = res["routing"]
    title = (f"{res['op']} by {res['algorithm']}, {res['ranks']} ranks, step {res['step']}: "
             f"link utilisation under {pol['policy']} (seed {pol['seed']})")
    side = max(400, min(1400, 18 * len(nodes) + 200))
    fig.update_layout(title=esc(title), height=side, xaxis={"title": "to", "type": "category"},
                      yaxis={"title": "from", "type": "category", "autorange": "reversed"})
    return fig


def routes_html(res: Mapping[str, Any]) -> str:
    """A standalone page with the heat map (:mod:`clustersim.report.htmlpage`)."""
    from clustersim.report.htmlpage import escape_text, figure_script, standalone_page

    title = f"Routes: {res['scenario']} on {res['platform']}"
    head = (f"<h1>{escape_text(title)}</h1><p>Utilisation = bytes a link carries in the step "
            f"/ its capacity, relative to the busiest link (1 = the bottleneck); a cell is the "
            f"busiest cable between two nodes.  Step time at flow level: "
            f"{escape_text(format_time(res['step_time']))}.</p>")
    return standalone_page(title, head, [figure_script(routes_figure(res), "routes", _CONFIG)])
