"""``clustersim list``: the catalog's devices, links, topologies, routing policies,
collectives, algorithms and models, and one algorithm's parameters (kept out of cli.py so that
it stays small)."""

from __future__ import annotations

from typing import Any

from clustersim.errors import InputError

EXIT_OK = 0


def list_entries(console: Any, what: str, name: str | None) -> int:
    """``clustersim list WHAT [NAME]``: one table of the catalog's entries of a kind."""
    from rich.table import Table

    if name is not None:
        if what != "algorithms":
            raise InputError(f"'clustersim list {what}' takes no name; only 'list algorithms "
                             "NAME' shows one entry's parameters")
        return _list_algorithm(console, name)
    t = Table(title=what, title_justify="left")
    if what == "devices":
        from clustersim.catalog import builtin_catalog
        from clustersim.units import format_bandwidth

        t.add_column("name")
        t.add_column("fp32 peak (TFLOP/s)", justify="right")
        t.add_column("memory bw", justify="right")
        t.add_column("source")
        for name, d in sorted(builtin_catalog().devices.items()):
            t.add_row(name, f"{d.peak / 1e12:.2f}", format_bandwidth(d.mem_bw), d.source)
    elif what == "links":  # "assumed": figures no published measurement backs
        from clustersim.catalog import builtin_catalog
        from clustersim.units import format_bandwidth, format_time

        t.title = "links (bandwidth per direction, latency per hop)"
        t.add_column("name")
        t.add_column("bandwidth", justify="right")
        t.add_column("latency", justify="right")
        t.add_column("transport")
        t.add_column("assumed")
        t.add_column("source")
        for name, lk in sorted(builtin_catalog().links.items()):
            tr = lk.transport or "-"
            if lk.cpu_transport:
                tr += f" ({lk.cpu_transport} at a CPU port)"
            t.add_row(name, format_bandwidth(lk.bandwidth), format_time(lk.latency), tr,
                      ", ".join(lk.assumed) or "-", lk.source)
    elif what == "transports":
        from clustersim.catalog import builtin_catalog
        from clustersim.units import format_size, format_time

        # what software reaches on a link: docs/fabrics.md, "Transports"
        t.add_column("name")
        t.add_column("efficiency", justify="right")
        t.add_column("overhead", justify="right")
        t.add_column("above inline size", justify="right")
        t.add_column("assumed")
        t.add_column("source")
        for name, tr in sorted(builtin_catalog().transports.items()):
            extra = (f"+{format_time(tr.dma_read)} > {format_size(tr.inline)}"
                     if tr.dma_read > 0 else "-")
            t.add_row(name, f"{tr.efficiency:g}", format_time(tr.overhead), extra,
                      ", ".join(tr.assumed) or "-", tr.source)
    elif what == "collectives":
        from clustersim.collectives import describe_algorithm, list_algorithms

        t.add_column("op")
        t.add_column("algorithm")
        t.add_column("what it does")
        for op, algs in list_algorithms().items():
            for a in algs:
                t.add_row(op, a, describe_algorithm(op, a))
    elif what == "topologies":
        from clustersim.platform.describe import list_topologies

        t.add_column("topology")
        t.add_column("what it is")
        for name, doc in list_topologies().items():
            t.add_row(name, doc)
    elif what == "routing":
        from clustersim.platform.policies import POLICIES

        t.add_column("policy")
        t.add_column("topologies")
        t.add_column("what it does")
        for name, (doc, where) in POLICIES.items():
            t.add_row(name, ", ".join(where) if where else "all", doc)
    elif what == "algorithms":
        from clustersim.algorithms.base import list_algorithms as algs

        t.add_column("algorithm")
        t.add_column("family")
        t.add_column("what it does")
        for name, d in algs().items():
            t.add_row(name, d.family, d.summary)
    elif what == "models":
        from clustersim.workload import get_model, list_models

        t.add_column("model")
        t.add_column("parameters", justify="right")
        t.add_column("forward GFLOP/sample", justify="right")
        for name in list_models():
            m = get_model(name)
            t.add_row(name, f"{m.params:,}", f"{m.fwd_flops / 1e9:.2f}")
    console.print(t)
    return EXIT_OK


def _list_algorithm(console: Any, name: str) -> int:
    """One algorithm: what it does, its source, and every parameter a scenario may set."""
    from rich.table import Table

    from clustersim.algorithms.base import get_algorithm

    d = get_algorithm(name)
    console.print(f"[bold]{d.name}[/bold] ({d.family}) — {d.summary}")
    if d.source:
        console.print(f"source: {d.source}")
    t = Table(title=f"parameters (algorithm: {{name: {d.name}, ...}})", title_justify="left")
    for col in ("parameter", "default", "allowed", "what it sets", "source"):
        t.add_column(col)
    for key, prm in d.params.items():
        if prm.choices:
            allowed = ", ".join(str(c) for c in prm.choices)
        else:
            lo = "" if prm.minimum is None else f">= {prm.minimum:g}"
            hi = "" if prm.maximum is None else f"<= {prm.maximum:g}"
            allowed = " and ".join(x for x in (lo, hi) if x) or prm.kind.__name__
        t.add_row(key, str(prm.default), allowed, prm.help, prm.source)
    console.print(t)
    return EXIT_OK
