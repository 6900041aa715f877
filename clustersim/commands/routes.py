"""``clustersim routes SCENARIO``: the routes of one collective step and the load they put on
every link, under the platform's routing policy or another one (``--routing``, ``--seed``).

Why: a prediction that is off on a fabric is usually off because of *where* the flows go -
three of four inter-leaf flows hashed onto one spine, a dragonfly's one global link carrying a
whole group's traffic.  This command shows exactly that: each transfer's route, each link's
flows, bytes and utilisation (bytes / capacity, relative to the busiest link: 1.0 is the
bottleneck), and the step's time at flow level.  ``--seeds N`` repeats the analysis for hash
seeds 0..N-1 to show how much a result depends on the hash (ECMP's spread).
"""

from __future__ import annotations

import argparse
from typing import Any

from clustersim.errors import InputError

EXIT_OK = 0

#: most seeds ``--seeds`` runs (each is a routing of the step plus one flow simulation)
MAX_SEEDS = 256

#: most concurrent transfers in the step ``routes`` simulates (see :func:`_check_size`)
MAX_TRANSFERS = 8192


def _platform(scn: Any, policy: str | None, seed: int | None) -> Any:
    """The scenario's platform, under ``--routing``/``--seed`` when given."""
    from clustersim.platform.policies import RoutingSpec

    plat = scn.platform
    if policy is None and seed is None:
        return plat
    spec = RoutingSpec(policy if policy is not None else plat.routing.policy,
                       seed if seed is not None else plat.routing.seed)
    try:
        return plat.with_routing(spec)
    except InputError as exc:
        flag = "--seed" if exc.path and exc.path[-1] == "seed" else "--routing"
        raise InputError(exc.message, path=(flag,)) from None


def _step(scn: Any, args: argparse.Namespace, plat: Any) -> tuple[Any, int, dict[str, Any]]:
    """The schedule's step to show, its number (1-based) and what was chosen."""
    from clustersim.collectives import build_schedule, list_algorithms
    from clustersim.collectives.nccl_machine import machine_for
    from clustersim.collectives.selection import is_selector
    from clustersim.errors import unknown_name
    from clustersim.scenario.fields import whole_bytes
    from clustersim.units import parse_size

    b = scn.benchmark
    ops = list_algorithms()
    op = args.op or (b.op if b else "allreduce")
    if op not in ops:
        raise unknown_name("collective", op, ops, path=("--op",))
    alg = args.algorithm or (b.algorithms[0] if b and b.op == op else "ring")
    if alg not in ops[op]:
        raise unknown_name(f"{op} algorithm", alg, ops[op], path=("--algorithm",))
    # "is None", not "or": --ranks 0 had silently meant the default (QA 10 M6)
    ranks = args.ranks if args.ranks is not None else \
        (min(max(b.ranks), plat.num_devices) if b else plat.num_devices)
    if not 2 <= ranks <= plat.num_devices:
        raise InputError(f"must be from 2 to {plat.num_devices} (a collective step needs two "
                         f"ranks; the platform has {plat.num_devices} devices), not {ranks}",
                         path=("--ranks",))
    try:
        size = whole_bytes(parse_size(args.size, allow_zero=False), args.size) \
            if args.size else (max(b.sizes) if b else 2.0**26)
    except (ValueError, InputError) as exc:
        raise InputError(getattr(exc, "message", str(exc)), path=("--size",)) from None
    root = b.root if b and b.op == op else 0
    hosts = [plat.host(d) for d in range(ranks)]
    try:
        sched = build_schedule(op, alg, ranks, size, hosts=hosts, root=root,
                               fp16=bool(b and b.fp16), library=getattr(plat, "library", None),
                               machine=machine_for(alg, plat, range(ranks)))
    except ValueError as exc:
        raise InputError(str(exc), path=("--algorithm",)) from None
    steps = sched.steps
    if not steps:
        raise InputError(f"{op} by {alg} on {ranks} rank(s) has no steps; give --ranks from "
                         f"2 to {plat.num_devices}", path=("--ranks",))
    k = args.step
    if not 1 <= k <= len(steps):
        raise InputError(f"must be from 1 to {len(steps)} ({op} by {alg} on {ranks} "
                         f"ranks has {_steps_text(steps)}), not {k}", path=("--step",))
    _check_size(steps[k - 1], op, alg, ranks, ops[op])
    # a selector's schedule is named library→choice: say which algorithm's step this is, as
    # predict does ("" for a named algorithm, as predict's JSON)
    selected = sched.algorithm if is_selector(alg) else ""
    return steps[k - 1], k, {"op": op, "algorithm": alg, "selected": selected, "ranks": ranks,
                             "size": size, "steps": len(steps)}


def _steps_text(steps: Any) -> str:
    """``2 distinct steps, 510 in all as each repeats``: a ring all-reduce on 256 ranks is
    two patterns repeated 255 times, and "has 2 steps" read as wrong (QA 10 L6)."""
    total = sum(getattr(s, "repeat", 1) for s in steps)
    if total == len(steps):
        return f"{len(steps)} step{'s' if len(steps) != 1 else ''}"
    return f"{len(steps)} distinct step{'s' if len(steps) != 1 else ''}, {total} in all " \
           f"as each repeats"


def _check_size(step: Any, op: str, alg: str, ranks: int, algs: Any) -> None:
    """Refuse a step with more concurrent transfers than :func:`analyse` can simulate flow
    by flow in seconds.  Why: every flow's end recomputes the max-min shares of the flows it
    shares links with, so the cost grows much faster than the flow count - direct all-to-all
    on a fat-tree took 1.3 s at 64 ranks (4,032 flows), 9.6 s at 96 (9,120) and did not end
    in 5 minutes at 256 (2.4 GB at 1,024) (QA 10 H7)."""
    n = len(step.transfers)
    if n > MAX_TRANSFERS:
        others = ", ".join(a for a in algs if a not in (alg, "auto"))
        raise InputError(
            f"{op} by {alg} on {ranks} ranks has {n:,} concurrent transfers in this step; "
            f"routes simulates a step flow by flow and takes at most {MAX_TRANSFERS:,} "
            f"(direct all-to-all: about 90 ranks); give fewer --ranks, or another "
            f"--algorithm ({others})", path=("--ranks",))


def analyse(plat: Any, step: Any, params: Any) -> dict[str, Any]:
    """Routes of the step's transfers, per-link load, and the step's time at flow level.

    Under an adaptive policy the routes are those the flows take when the step starts on an
    idle network (each flow sees the ones routed before it), as in the simulation."""
    ends: dict[int, tuple[str, str]] = {}
    for u, v, data in plat.cables():
        ends.setdefault(data["link"], (u, v))
    load = [0] * plat.num_links
    flows: dict[int, int] = {}
    nbytes: dict[int, float] = {}
    transfers = []
    for t in step.transfers:
        r = plat.choose_route(t.src, t.dst, load)
        for lk in r:
            load[lk] += 1
            flows[lk] = flows.get(lk, 0) + 1
            nbytes[lk] = nbytes.get(lk, 0.0) + float(t.nbytes)
        node = plat.devices[t.src]
        nodes = [node]
        for lk in r:  # a half-duplex cable names one resource for both directions
            u, v = ends[lk]
            node = v if u == node else u
            nodes.append(node)
        transfers.append({"src": t.src, "dst": t.dst, "bytes": float(t.nbytes),
                          "links": [plat.link_names[lk] for lk in r], "nodes": nodes,
                          "route": r})
    cap = plat.capacity
    drain = {lk: nbytes[lk] / float(cap[lk]) for lk in flows}
    top = max(drain.values(), default=0.0)
    links = sorted(({"link": plat.link_names[lk], "from": ends[lk][0], "to": ends[lk][1],
                     "kind": plat.link_kind[lk],
                     "flows": flows[lk], "bytes": nbytes[lk], "capacity": float(cap[lk]),
                     "drain_s": drain[lk],
                     "utilisation": drain[lk] / top if top > 0 else 0.0} for lk in flows),
                   key=lambda x: (-x["utilisation"], -x["flows"], x["link"]))
    routes = [x.pop("route") for x in transfers]
    return {"transfers": transfers, "links": links,
            "step_time": _step_time(plat, routes, [x["bytes"] for x in transfers], params),
            "max_flows": max(flows.values(), default=0), "bottleneck_s": top}


def _step_time(plat: Any, routes: list[tuple[int, ...]], sizes: list[float],
               params: Any) -> float:
    """One occurrence of the step on an idle network, costed as the simulator costs it.

    Why this path: the network comes from :meth:`FlowNetwork.for_platform`, as the engine's
    and :func:`~clustersim.network.flowsim.simulate_schedule`'s do, so the links' transports
    (TCP's efficiency on Ethernet, RoCE, OPA, PCIe peer-to-peer) and an adaptive policy's
    network apply; building the network from capacities and classes alone had left the
    transports out and printed a step ~10% fast on 25 GbE (QA 12 F5).  The step overhead
    (``network.step_overhead``) is paid before the transfers of a step that crosses a link,
    as in :func:`~clustersim.network.flowsim.schedule_process`; the receivers' reduction is
    not (it is compute, not the fabric).  The step ends when its transfers' event fires, as
    the simulator's step does."""
    import simpy

    from clustersim.network.flow import FlowNetwork

    env = simpy.Environment()
    net = FlowNetwork.for_platform(env, plat, params)

    def run() -> Any:
        if params.step_overhead > 0.0 and any(routes):
            yield env.timeout(params.step_overhead)
        if routes:
            yield net.transfer_all(routes, sizes, collective=True)
        return env.now

    # the step ends when its last transfer arrives, not when the network's last timer
    # fires: running the environment dry had added 0.1 us on some dragonfly steps
    proc = env.process(run())
    env.run(until=proc)
    return float(proc.value)


def cmd_routes(args: argparse.Namespace) -> int:
    """``clustersim routes``: route and simulate the chosen step (with ``--seeds``, once per
    seed as well), write ``--json``/``--plot``, print the tables; the exit code."""
    from clustersim.cli import _console
    from clustersim.report.output import check_outputs, json_text, write_outputs
    from clustersim.report.routes import print_routes, routes_html, spread_rows
    from clustersim.scenario.schema import load_scenario
    from clustersim.shipped import scenario_path

    if args.seeds is not None and not 1 <= args.seeds <= MAX_SEEDS:
        raise InputError(f"takes 1 to {MAX_SEEDS}, not {args.seeds}", path=("--seeds",))
    if args.rows < 0:
        raise InputError(f"must be >= 0 (0: every row), not {args.rows}",
                         path=("--rows",))
    check_outputs({"--json": args.json, "--plot": args.plot})
    scn = load_scenario(str(scenario_path(args.scenario)), list(args.set or []))
    plat = _platform(scn, args.routing, args.seed)
    step, k, what = _step(scn, args, plat)
    res = {"scenario": scn.name, "platform": plat.name,
           "routing": {"policy": plat.routing.policy, "seed": plat.routing.seed},
           **what, "step": k, **analyse(plat, step, scn.network)}
    if args.seeds:
        res["seeds"] = []
        for s in range(args.seeds):
            one = analyse(_platform(scn, plat.routing.policy, s), step, scn.network)
            res["seeds"].append({"seed": s, "step_time": one["step_time"],
                                 "max_flows": one["max_flows"],
                                 "bottleneck_s": one["bottleneck_s"]})
        res["spread"] = spread_rows(res["seeds"])
    # the text header and the plot title name the selected algorithm (mpich→rabenseifner)
    shown = {**res, "algorithm": res["selected"] or res["algorithm"]}
    write_outputs([(args.json, lambda: json_text(res)),
                   (args.plot, (lambda: routes_html(shown)) if args.plot else "")])
    if not args.quiet:
        print_routes(_console(False, args.wide), shown, rows=args.rows, wide=args.wide)
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """Add ``routes`` and its options to the CLI's subparsers."""
    p = sub.add_parser(
        "routes", help="routes of one collective step and the load on every link",
        description="Show each transfer's route and each link's flows, bytes and utilisation "
                    "(bytes / capacity, 1.0 = the busiest link) for one step of a collective "
                    "on the scenario's platform, under its routing policy or --routing "
                    "(docs/fabrics.md, 'Routing policies').")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped scenario")
    p.add_argument("--op", help="collective (default: the benchmark's, else allreduce)")
    p.add_argument("--algorithm", help="algorithm (default: the benchmark's first, else ring)")
    p.add_argument("--ranks", type=int, help="ranks, from 2 to the platform's devices "
                                             "(default: the benchmark's largest that fits, "
                                             "else every device); a step may have at most "
                                             f"{MAX_TRANSFERS} transfers")
    p.add_argument("--size", help="message size, e.g. 64MiB (default: the benchmark's "
                                  "largest, else 64 MiB)")
    p.add_argument("--step", type=int, default=1, help="step of the schedule, from 1 "
                                                       "(default %(default)s)")
    p.add_argument("--routing", metavar="POLICY",
                   help="routing policy: ecmp, minimal, dmodk, smodk, valiant, ugal "
                        "(default: the platform's)")
    p.add_argument("--seed", type=int, help="the policy's hash seed, 0 to 2^32-1 (default: the platform's)")
    p.add_argument("--seeds", type=int, metavar="N",
                   help=f"also route with seeds 0..N-1 (N from 1 to {MAX_SEEDS}) and show the spread "
                        "of the step time")
    p.add_argument("--rows", type=int, default=20,
                   help="rows per table, busiest links first (0: all; default %(default)s)")
    p.add_argument("--json", metavar="FILE", help="write routes and link loads as JSON")
    p.add_argument("--plot", metavar="FILE.html",
                   help="write a heat map of link utilisation (standalone HTML)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario field, as in predict (repeatable)")
    p.add_argument("-q", "--quiet", action="store_true", help="no tables")
    p.add_argument("--wide", action="store_true", help="every table column")
    p.set_defaults(func=cmd_routes)
