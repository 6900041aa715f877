"""``clustersim list``: the catalog's devices, links, topologies, routing policies,
collectives, algorithms and models, one algorithm's parameters, and the shipped scenarios that
every command that takes a scenario accepts by bare name (kept out of cli.py so
that it stays small)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clustersim.errors import InputError, unknown_name

EXIT_OK = 0

#: the kinds ``clustersim list`` knows, in the order ``--help`` shows them
KINDS = ("devices", "links", "transports", "topologies", "routing", "collectives", "algorithms",
         "models", "scenarios")


def list_entries(console: Any, what: str, name: str | None) -> int:
    """``clustersim list WHAT [NAME]``: one table of the catalog's entries of a kind."""
    from rich.table import Table

    if name is not None:
        if what == "scenarios":
            return _list_scenario(console, name)
        if what != "algorithms":
            raise InputError(f"'clustersim list {what}' takes no name; only 'list algorithms "
                             "NAME' (its parameters) and 'list scenarios NAME' (its file) show "
                             "one entry")
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
        from clustersim.platform.describe import COMMON_FIELDS, list_topologies, topology_fields

        t.add_column("topology")
        t.add_column("fields (=default)")
        t.add_column("what it is")
        for name, doc in list_topologies().items():
            t.add_row(name, ", ".join(topology_fields(name)), doc)
        t.caption = (f"every topology also takes: {', '.join(COMMON_FIELDS)}; a device or "
                     f"link field names a catalog entry (clustersim list devices, links)")
        t.caption_justify = "left"
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
            g = m.fwd_flops / 1e9  # lenet5's 0.00083 had read 0.00 (audit 23)
            t.add_row(name, f"{m.params:,}", f"{g:,.2f}" if g >= 0.1 else f"{g:.2g}")
    elif what == "scenarios":
        from rich.text import Text

        from clustersim.shipped import find_shipped, shipped_names

        # one line each, cut with "…" at the terminal's width: a menu of the names to pass to
        # predict, whole (they are what to type); only the about column narrows and its cells
        # do not wrap; 'list scenarios NAME' shows the whole description
        names = shipped_names("scenarios")
        rows = [(name, _about(find_shipped("scenarios", name))) for name in names]
        width = max(map(len, names))
        # narrower than a table with the names whole and some of the about: one line per
        # scenario, name first and whole, wrapped by the terminal
        if console.width < width + 16:
            for name, about in rows:
                print(f"{name:<{width}}  {about}".rstrip())
            return EXIT_OK
        # the name column is never narrower than the longest name, however narrow the
        # terminal: the about text gives way (cut with "…", or gone at ~30 columns)
        t.add_column("scenario", no_wrap=True, min_width=width)
        t.add_column("about")
        for name, about in rows:
            t.add_row(name, Text(about, no_wrap=True, overflow="ellipsis"))
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


def _about(path: Path | None) -> str:
    """A shipped scenario's ``about:`` field, or why it cannot be shown: one unreadable file
    (being edited in a checkout) must not hide the other names from the listing."""
    import yaml

    from clustersim._yaml import safe_load

    try:
        data = safe_load(path.read_text(encoding="utf-8")) if path is not None else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return f"(cannot read: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    about = data.get("about") if isinstance(data, dict) else None
    return " ".join(str(about).split()) if about else "-"


def _list_scenario(console: Any, name: str) -> int:
    """One shipped scenario: where its file is (to copy and edit), its ``about:`` and the
    comment at the top of the file, which says what it reproduces and what to expect."""
    from clustersim.shipped import find_shipped, shipped_names

    path = find_shipped("scenarios", name)
    if path is None:
        raise unknown_name("shipped scenario", name, shipped_names("scenarios"))
    # soft_wrap: the comment is already wrapped in the file; rich re-wrapping it at the
    # terminal's width would break every line in two
    console.print(str(path), markup=False, highlight=False, soft_wrap=True)
    console.print(f"about: {_about(path)}", markup=False, highlight=False, soft_wrap=True)
    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line[2:] if line.startswith("# ") else line[1:])
    if header:
        console.print("", *header, sep="\n", markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK
