"""Python API the CLI calls: launch a realrun program, collect its traces and results.

Each function starts ``mpiexec`` through :func:`realrun.launch.launch` (timeouts, per-rank
logs, failure blame, no strays), then reads what the ranks wrote.  The per-rank JSON Lines
traces are the source of truth - results are rebuilt from them - so a run recorded on another
machine can be analysed the same way (:func:`load_traces`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clustersim.trace import TraceEvent, read_jsonl, write_chrome
from realrun.launch import LaunchResult, launch
from realrun.mbresults import results_from_events
from realrun.microbench import BENCHES, DEFAULT_SIZES

__all__ = ["run_microbenchmarks", "verify_schedules", "run_selftest", "load_traces",
           "DEFAULT_SIZES"]

RANK_MODULE = "realrun"
DEFAULT_TIMEOUT = 600.0


def _csv(items: Iterable[Any]) -> str:
    return ",".join(str(x) for x in items)


def load_traces(out_dir: str | os.PathLike[str]) -> tuple[list[dict[str, Any]],
                                                           list[TraceEvent]]:
    """Headers and events of every ``trace.rank*.jsonl`` in ``out_dir`` (rank order)."""
    files = sorted(Path(out_dir).glob("trace.rank*.jsonl"),
                   key=lambda p: int(p.name[len("trace.rank"):-len(".jsonl")]))
    headers: list[dict[str, Any]] = []
    events: list[TraceEvent] = []
    for f in files:
        head, evs = read_jsonl(f)
        headers.append(head)
        events.extend(evs)
    return headers, events


def _launch(argv: Sequence[str], np: int, timeout: float, out_dir: Path,
            mpiexec: str | None, hostfile: str | None, env: Mapping[str, str] | None
            ) -> LaunchResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("trace.rank*.jsonl"):  # a previous run's ranks must not mix in
        old.unlink()
    return launch(RANK_MODULE, [*argv, "--out", str(out_dir)], np, timeout=timeout,
                  log_dir=out_dir / "logs", mpiexec=mpiexec, hostfile=hostfile, env=env)


def run_microbenchmarks(
    np: int = 2,
    *,
    out_dir: str | os.PathLike[str],
    sizes: Sequence[int] | None = None,
    collective_sizes: Sequence[int] | None = None,
    benches: Sequence[str] = BENCHES,
    ops: Sequence[str] = ("allreduce",),
    algorithms: Sequence[str] = ("mpi",),
    gemm_shapes: Sequence[tuple[int, int, int]] = ((256, 256, 256), (512, 512, 512)),
    gemm_precisions: Sequence[str] | None = None,
    mem_sizes: Sequence[int] = (1 << 16, 1 << 20, 16 << 20),
    noise_shape: tuple[int, int, int] | None = None,
    noise_calls: int | None = None,
    off_cache: int = 0,
    target: float = 0.02,
    repeats: int = 5,
    dtype: str = "float32",
    backend: str = "auto",
    timeout: float = DEFAULT_TIMEOUT,
    mpiexec: str | None = None,
    hostfile: str | None = None,
    env: Mapping[str, str] | None = None,
    chrome: bool = True,
) -> list[dict[str, Any]]:
    """Run the microbenchmarks on ``np`` ranks; returns result rows (see ``microbench``).

    ``sizes`` are the message sizes of ping-pong and (unless ``collective_sizes`` is given)
    of the collectives; ``noise_shape``/``noise_calls`` the noise bench's GEMM and call count
    (default ``microbench.NOISE_GEMM``/``NOISE_CALLS``); ``off_cache`` the bytes of message
    buffers ping-pong and collectives rotate through (``microbench.buffer_sets``);
    ``gemm_precisions`` measures every GEMM shape in each of fp32/tf32/bf16/fp16
    (:mod:`realrun.precision`; tf32 and bf16 need a GPU).  Writes into ``out_dir``: ``trace.rank<r>.jsonl``, ``results.json``,
    ``logs/`` and (with ``chrome``) ``trace.chrome.json`` for Perfetto / chrome://tracing.
    """
    out = Path(out_dir)
    argv = ["microbench", "--benches", _csv(benches), "--ops", _csv(ops),
            "--algorithms", _csv(algorithms), "--sizes", _csv(sizes or DEFAULT_SIZES),
            "--gemm", _csv(f"{m}x{n}x{k}" for m, n, k in gemm_shapes),
            *(["--gemm-precisions", _csv(gemm_precisions)] if gemm_precisions else []),
            "--mem-sizes", _csv(mem_sizes), "--target", repr(float(target)),
            *(["--coll-sizes", _csv(collective_sizes)] if collective_sizes else []),
            *(["--noise-gemm", "x".join(str(int(d)) for d in noise_shape)]
              if noise_shape else []),
            *(["--noise-calls", str(int(noise_calls))] if noise_calls else []),
            *(["--off-cache", str(int(off_cache))] if off_cache else []),
            "--repeats", str(int(repeats)), "--dtype", dtype, "--backend", backend]
    _launch(argv, np, timeout, out, mpiexec, hostfile, env)
    _, events = load_traces(out)
    rows = results_from_events(events)
    (out / "results.json").write_text(json.dumps(rows, indent=1, sort_keys=True))
    if chrome:
        write_chrome(out / "trace.chrome.json", events, "realrun microbench")
    return rows


def verify_schedules(
    np: int,
    *,
    out_dir: str | os.PathLike[str],
    algorithms: Sequence[str],
    ops: Sequence[str] = ("allreduce",),
    sizes: Sequence[int] = (4, 1000, 1 << 16),
    dtype: str = "float32",
    iterations: int = 2,
    ranks_per_host: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    mpiexec: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Run our schedules next to the MPI library on the same inputs; rows of max errors.

    ``algorithms=("all",)`` checks every algorithm of each op (those that cannot run on
    ``np`` ranks come back with a ``skipped`` reason).  ``ranks_per_host`` pretends hosts of
    that many ranks, for ``hierarchical``.  A mismatch makes every rank exit 1, which surfaces
    as a :class:`RealRunError`; the rows are still in ``out_dir/verify.json``.
    """
    out = Path(out_dir)
    argv = ["verify", "--ops", _csv(ops), "--algorithms", _csv(algorithms),
            "--sizes", _csv(sizes), "--dtype", dtype, "--iterations", str(int(iterations))]
    if ranks_per_host:
        argv += ["--ranks-per-host", str(int(ranks_per_host))]
    _launch(argv, np, timeout, out, mpiexec, None, env)
    return json.loads((out / "verify.json").read_text())


def run_selftest(
    np: int = 2,
    *,
    out_dir: str | os.PathLike[str],
    iterations: int = 20,
    size: int = 1 << 16,
    compute: float = 0.001,
    fault: str | None = None,
    fault_rank: int = 1,
    fault_after: int = 5,
    timeout: float = 60.0,
    mpiexec: str | None = None,
    env: Mapping[str, str] | None = None,
) -> LaunchResult:
    """The compute + all-reduce loop (optionally with an injected fault); traces in out_dir."""
    argv = ["selftest", "--iterations", str(iterations), "--size", str(size),
            "--compute", repr(float(compute))]
    if fault:
        argv += ["--fault", fault, "--fault-rank", str(fault_rank),
                 "--fault-after", str(fault_after)]
    return _launch(argv, np, timeout, Path(out_dir), mpiexec, None, env)
