"""A closed-loop parameter server in SimGrid's SMPI and in clustersim, the same protocol in both.

SimGrid's side runs ``ps_bench.c`` under smpirun with :data:`sg_smpi.CONFIG` (CM02 pure
max-min, no correction factors, no software overheads) and rendezvous sends
(``smpi/send-is-detached-thresh:0``: an ``MPI_Send`` returns once its message has arrived,
clustersim's blocking ``Send``).  clustersim's side runs the built-in Async SGD actors
(``clustersim.algorithms.ps.ASYNC_SGD.actors`` with ``shards: 1``, ``tau: 1``: its
``ps_worker`` and ``async_server`` bodies) on the engine directly, with a cost model that
gives each compute operation the C program's time instead of a workload's:

=====================  ===========================================  ==========================
step                   ps_bench.c (rank 0 server, 1..N workers)      clustersim (async_sgd)
=====================  ===========================================  ==========================
worker compute         ``sg_actor_sleep_for(C x factor(w, k))``     ``forward`` = C x factor,
                                                                    ``backward`` = 0
push                   ``MPI_Send(S bytes)`` to rank 0              blocking ``Send(S + 16)``
reply                  ``MPI_Recv(S bytes)`` from rank 0            ``Recv(src=server)``
server takes a push    ``prepost``: an ``MPI_Irecv`` always posted  ``Recv(tag=push)``: the
                       per worker, served in completion order;      first arrived (a send
                       ``anysource``: ``MPI_Recv(ANY_SOURCE)``      travels unmatched)
server update          ``sg_actor_sleep_for(U)``                    ``accumulate`` = U
server reply           ``isend``: ``MPI_Isend`` after waiting for   non-blocking ``Send(S+16)``
                       its previous reply to that worker;           after ``Wait`` on its
                       ``send``: blocking ``MPI_Send``              previous one to the worker
=====================  ===========================================  ==========================

``prepost`` + ``isend`` is the program that does what clustersim's Async SGD does; the other
two are what a plain MPI server does (a blocking ``MPI_Recv(MPI_ANY_SOURCE)``): with
rendezvous sends (every message above SMPI's 64 KiB eager limit, and every message here) a
push's transfer starts only when that receive matches it.  They are recorded to show which
of clustersim's two models such a server resembles; clustersim has no receive-side matching.

The 16 bytes: SMPI sends ``size + 16`` bytes per message (its envelope, ``sg_smpi``'s note);
clustersim's messages carry ``S + 16`` so that the two move the same bytes.

Platform: :data:`STAR128`, SimGrid's ``<cluster>`` of 128 hosts with one private 10 Gb/s,
1 us split-duplex link each (``crossbar16`` with more hosts), clustersim's ``star`` with the
same links (``sg_clustersim.platform_dict``); the server on host 0, worker w on host w.

Measures, from every worker's iteration start times ``t_0 .. t_{I-1}`` and end ``t_I``
(the same in both simulators, :func:`summarize`): the mean over workers of
``(t_I - t_1) / (I - 1)`` (iteration 0 is the warm-up) and the server's updates per second,
``sum over workers of (I - 1) / (t_I - t_1)``.
"""

from __future__ import annotations

import csv
import os
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from sg_platforms import SgPlatform, hostfile, platform_xml

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "ps_bench.c"

#: SimGrid's cluster of 128 hosts: room for a server and 124 workers (and 127 at most)
STAR128 = SgPlatform(
    "star128", "crossbar", 128, 1.25e9, 1e-6,
    about="128 hosts, one 10 Gb/s 1 us link each, non-blocking (crossbar16 with more hosts)")
PLATFORMS = {STAR128.name: STAR128}

#: SMPI's per-message envelope (payload_size = size + 16 in smpi_request.cpp)
ENVELOPE = 16
MODES = ("prepost", "anysource")
REPLIES = ("isend", "send")
_MASK = (1 << 64) - 1


def compute_factor(w: int, k: int, jitter: float) -> float:
    """Worker ``w``'s (SimGrid rank, 1..N) compute-time factor at iteration ``k``:
    ``1 + jitter x (2u - 1)`` with ``u`` in [0, 1) the splitmix64 finaliser of ``(w, k)`` -
    ps_bench.c's ``compute_factor``, the same integer arithmetic, so the same doubles."""
    if jitter == 0.0:
        return 1.0
    h = (w * 0x9E3779B97F4A7C15 + k * 0xBF58476D1CE4E5B9) & _MASK
    h ^= h >> 31
    h = (h * 0x94D049BB133111EB) & _MASK
    h ^= h >> 29
    u = float(h >> 11) * 2.0 ** -53
    return 1.0 + jitter * (2.0 * u - 1.0)


@dataclass(frozen=True)
class PsCase:
    """One closed-loop parameter-server run: ``workers`` workers, ``iterations`` each."""

    platform: str
    mode: str  # prepost | anysource
    reply: str  # isend | send
    workers: int
    bytes: int  # S: each push and each reply (SMPI adds its 16-byte envelope)
    compute_s: float  # C: a worker's compute per iteration (x its jitter factor)
    update_s: float  # U: the server's update per push
    jitter: float
    iterations: int

    @property
    def matches_clustersim(self) -> bool:
        """Whether the MPI program does what clustersim's Async SGD does (see the module)."""
        return self.mode == "prepost" and self.reply == "isend"


@dataclass(frozen=True)
class PsRow(PsCase):
    """A case with SimGrid's figures (what the CSV holds)."""

    sg_iter_s: float = 0.0
    sg_updates_per_s: float = 0.0
    sg_wall_s: float = 0.0

    def case(self) -> PsCase:
        return PsCase(**{f.name: getattr(self, f.name) for f in fields(PsCase)})


def summarize(times: Sequence[Sequence[float]], warmup: int = 1) -> tuple[float, float]:
    """(mean iteration time, updates per second) from each worker's ``t_0 .. t_I``."""
    iters = len(times[0]) - 1
    if iters <= warmup:
        raise ValueError("need more iterations than the warm-up")
    spans = [t[iters] - t[warmup] for t in times]
    steps = iters - warmup
    return (sum(s / steps for s in spans) / len(spans), sum(steps / s for s in spans))


# -- SimGrid -----------------------------------------------------------------------------------
def build(workdir: Path) -> Path:
    """Compile ps_bench.c with smpicc (``sg_smpi.SimGridMissing`` without SimGrid)."""
    import sg_smpi

    return sg_smpi.build(workdir, SOURCE)


def simgrid_times(exe: Path, case: PsCase, timeout: float = 600) -> list[list[float]]:
    """Each worker's iteration start times and end (s) under SMPI (rank w -> row w-1)."""
    from sg_smpi import CONFIG, PROTOCOLS
    plat = PLATFORMS[case.platform]
    if case.workers + 1 > plat.hosts:
        raise ValueError(f"{case.workers} workers and a server need more than "
                         f"{plat.hosts} hosts")
    with tempfile.TemporaryDirectory(prefix="sgps") as tmp:
        tmpd = Path(tmp)
        (tmpd / "platform.xml").write_text(platform_xml(plat))
        (tmpd / "hosts").write_text(hostfile(list(range(case.workers + 1))))
        cfg = [f"--cfg={c}" for c in (*CONFIG, *PROTOCOLS["rendezvous"])]
        cmd = ["smpirun", "-np", str(case.workers + 1), "-platform",
               str(tmpd / "platform.xml"), "-hostfile", str(tmpd / "hosts"), *cfg,
               "--log=root.thresh:warning", str(exe), case.mode, case.reply,
               str(case.iterations), str(case.bytes), repr(case.compute_s),
               repr(case.update_s), repr(case.jitter)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env=dict(os.environ, TMPDIR=str(tmpd)), cwd=tmpd)
    if out.returncode != 0:
        tail = (out.stdout + out.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"smpirun failed ({out.returncode}): " + " | ".join(tail))
    rows: dict[int, list[float]] = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "TIMES":
            rows[int(parts[1])] = [float(x) for x in parts[2:]]
    if sorted(rows) != list(range(1, case.workers + 1)):
        raise RuntimeError(f"ps_bench printed {len(rows)} workers, not {case.workers}")
    return [rows[w] for w in range(1, case.workers + 1)]


def run_simgrid(exe: Path, case: PsCase, timeout: float = 600) -> PsRow:
    t0 = time.monotonic()
    it, ups = summarize(simgrid_times(exe, case, timeout))
    return PsRow(**asdict(case), sg_iter_s=it, sg_updates_per_s=ups,
                 sg_wall_s=round(time.monotonic() - t0, 2))


# -- clustersim --------------------------------------------------------------------------------
class _CaseCosts:
    """The cost model of a case: ``forward`` is the worker's C x factor(w, k), ``backward``
    nothing, the shard's ``accumulate`` U (the engine asks for every compute operation; the
    iteration is the worker's current one)."""

    def __init__(self, case: PsCase) -> None:
        self.case = case

    def compute(self, op: Any, actor: Any, device: int, iteration: int) -> float:
        c = self.case
        if op.phase == "forward":
            return c.compute_s * compute_factor(actor.rank + 1, iteration, c.jitter)
        if op.phase == "accumulate":
            return c.update_s
        if op.phase == "backward":
            return 0.0
        raise ValueError(f"unexpected compute phase {op.phase!r}")


_SCENARIOS: dict[str, Any] = {}


def _scenario(plat: SgPlatform) -> Any:
    """The clustersim scenario of the platform (built once: its platform object caches
    routes and message plans across runs)."""
    if plat.name not in _SCENARIOS:
        from sg_clustersim import _NETWORK, platform_dict

        from clustersim.scenario.schema import parse_scenario
        raw = {"name": f"simgrid_ps_{plat.name}", "platform": platform_dict(plat),
               "network": _NETWORK,
               "benchmark": {"op": "p2p", "algorithms": ["direct"], "ranks": [2],
                             "sizes": ["4 B"]},
               "run": {"fidelity": "flow", "seed": 0}}
        _SCENARIOS[plat.name] = parse_scenario(raw)
    return _SCENARIOS[plat.name]


def clustersim_times(case: PsCase, fidelity: str) -> list[list[float]]:
    """Each worker's iteration start times and end (s) in clustersim at ``fidelity``
    (``flow``: max-min flows; ``analytic``: FIFO link queues), the engine run directly on
    Async SGD's actors (one shard, ``tau`` 1; the shard is rank ``N`` on host 0, worker
    ``w`` is on host ``w + 1``, as SimGrid's rank w + 1)."""
    from clustersim.algorithms.base import JobInfo
    from clustersim.algorithms.ps import ASYNC_SGD
    from clustersim.sim.engine import Engine

    if fidelity not in ("flow", "analytic"):
        raise ValueError("fidelity: flow or analytic")
    scn = _scenario(PLATFORMS[case.platform])
    n, wire = case.workers, float(case.bytes + ENVELOPE)
    job = JobInfo(workers=n, iterations=case.iterations, grad_bytes=wire, num_layers=1,
                  buckets=((0, 1, wire),), hosts=tuple(range(1, n + 1)), servers=1,
                  params={"shards": 1, "tau": 1})
    actors = ASYNC_SGD.actors(job)  # workers 0..n-1, the shard n
    placement = [*range(1, n + 1), 0]
    res = Engine(scn.platform, job, actors, placement, _CaseCosts(case), params=scn.network,
                 fidelity=fidelity).run()
    out = []
    for st in res.actors[:n]:  # the engine appends the actor's end to its iteration starts
        if len(st.iterations) != case.iterations + 1 or st.iterations[-1] != st.end:
            raise RuntimeError("a worker did not run every iteration")
        out.append(list(st.iterations))
    return out


def clustersim_summary(case: PsCase, fidelity: str) -> tuple[float, float]:
    """(mean iteration time, updates per second) of :func:`clustersim_times`."""
    return summarize(clustersim_times(case, fidelity))


# -- the recorded file -------------------------------------------------------------------------
_COLUMNS = [f.name for f in fields(PsRow)]
_INTS = {"workers", "bytes", "iterations"}
_STRS = {"platform", "mode", "reply"}


def write_csv(path: Path, rows: Iterable[PsRow], append: bool = False) -> None:
    new = not append or not path.exists()
    with path.open("a" if append else "w", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(_COLUMNS)
        for r in rows:
            w.writerow([getattr(r, c) if c in _STRS or c in _INTS else repr(getattr(r, c))
                        for c in _COLUMNS])


def read_csv(path: Path) -> list[PsRow]:
    rows = []
    with path.open(newline="") as f:
        for rec in csv.DictReader(f):
            kw: dict[str, Any] = {}
            for c in _COLUMNS:
                v = rec[c]
                kw[c] = v if c in _STRS else int(v) if c in _INTS else float(v)
            rows.append(PsRow(**kw))
    return rows
