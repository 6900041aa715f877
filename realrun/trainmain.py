"""``python -m realrun.trainmain``: what every rank of ``clustersim run --real`` runs.

Each rank resolves the scenario itself (:func:`realrun.train.prepare`, the same job the
launcher and the simulator build), takes the actor whose rank is its MPI rank, allocates its
compute kernels (before the start-up barrier, so allocation is not timed) and interprets the
actor (:class:`realrun.interpreter.Interpreter`).  An exception aborts the whole job after the
traceback reached the rank's stderr and a ``failed`` state record was left for the launcher
(as :mod:`realrun.main` does), so no rank waits forever for a dead peer.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from clustersim.errors import InputError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from realrun.arrays import BACKEND_CHOICES
    from realrun.opcollectives import COLLECTIVE_MODES

    ap = argparse.ArgumentParser(prog="python -m realrun.trainmain",
                                 description="one rank of a real training run (under mpiexec)")
    ap.add_argument("--scenario", required=True, type=Path)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--algorithm", default=None)
    ap.add_argument("--collectives", default="library", choices=COLLECTIVE_MODES)
    ap.add_argument("--backend", default="auto", choices=BACKEND_CHOICES)
    ap.add_argument("--math", action="store_true", help="train the proxy model for real")
    ap.add_argument("--out", required=True, type=Path)
    return ap


def _run(args: argparse.Namespace, holder: list) -> int:
    import numpy as np
    from mpi4py import MPI

    from clustersim.algorithms.proxy import make_math
    from realrun.arrays import get_backend
    from realrun.compute import KernelPlan
    from realrun.interpreter import Interpreter
    from realrun.opcollectives import Collectives
    from realrun.runtime import RankContext, write_json
    from realrun.train import prepare

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    setup = prepare(args.scenario, algorithm=args.algorithm, sets=args.set)
    if size != setup.np:
        raise InputError(f"{size} MPI ranks for {setup.np} actors ({setup.workers} worker(s) "
                         f"+ {setup.servers} server(s)): start one rank per actor")
    spec = setup.actors[rank]
    job = setup.job
    scn = setup.scenario
    backend = get_backend(args.backend)
    wl = scn.workload
    plan = KernelPlan(wl.model.layers, setup.batch, wl.optimizer, backend, job.grad_bytes)
    math = make_math(job, spec.rank, spec.role, spec.index) if args.math else None
    header = {"command": "train", "argv": sys.argv[1:], "scenario": scn.name,
              "algorithm": setup.algorithm.title, "workers": setup.workers,
              "servers": setup.servers, "actor_role": spec.role, "actor_index": spec.index,
              "collectives": args.collectives, "math": bool(args.math),
              "iterations": scn.run.iterations, "warmup": scn.run.warmup,
              "batch": setup.batch, "kernels": plan.totals(),
              "math_batch": math.task.batch if math is not None else None}
    ctx = RankContext(args.out, role=spec.role, backend=backend, header=header)
    holder.append(ctx)
    colls = Collectives(ctx, workers=tuple(range(setup.workers)), hosts=setup.hosts,
                        mode=args.collectives)
    start_loss = math.loss() if math is not None else None
    interp = Interpreter(ctx, spec, job, plan, colls, math=math)
    interp.run()
    if interp.unreceived:
        ctx.record("unreceived", float(interp.unreceived))
    interp.close()
    if math is not None:
        np.save(args.out / f"math.rank{rank}.npy", math.weights)
        write_json(args.out / f"math.rank{rank}.json", {
            "rank": rank, "role": spec.role, "index": spec.index,
            "loss_start": start_loss, "loss_end": math.loss(), "accuracy": math.accuracy(),
            "steps": math.steps, "params": int(math.weights.size), "digest": math.digest()})
    world.Barrier()
    ctx.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run this rank's actor; abort the job on any exception."""
    args = build_parser().parse_args(argv)
    holder: list = []
    try:
        return _run(args, holder)
    except BaseException as exc:  # noqa: BLE001 - any failure must end the whole job
        if isinstance(exc, SystemExit) and not exc.code:
            raise
        msg = str(exc) if isinstance(exc, InputError) else traceback.format_exc()
        print(msg, file=sys.stderr, flush=True)
        from mpi4py import MPI

        from realrun.main import _mark_failed

        _mark_failed(holder[0] if holder else None, f"{type(exc).__name__}: {exc}")
        MPI.COMM_WORLD.Abort(2 if isinstance(exc, InputError) else 1)
        return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
