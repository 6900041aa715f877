"""Checks ``clustersim calibrate`` makes before it measures anything.

Why a module of its own: ``calibrate --real`` spends seconds (``--quick``) to many minutes
(the full plan, ``--rounds``) on microbenchmarks and validation runs before it fits.  Input
that is wrong from the start - more MPI ranks than this machine has cores, a collective
benchmark among the validation scenarios, an unknown ``--link``, a work dir that cannot be
written - must be refused (exit 2) at once, not found as a traceback after the measuring,
with every rank already started on a shared machine (QA 10: H4, H5, H6, M5).
"""

from __future__ import annotations

import argparse
import errno
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clustersim.errors import InputError

__all__ = ["platform_path", "check_link", "check_rank_counts", "check_training_scenario",
           "check_work_dir", "dir_problem"]


def check_link(platform: Any, link: str | None) -> None:
    """``--link`` must name a link class of the platform: known before any measuring (it
    used to be checked by ``make_target`` only after all of it)."""
    if link is None:
        return
    classes = sorted(set(platform.link_kind))
    if link not in classes:
        from clustersim.errors import unknown_name

        raise unknown_name("link class", link, classes, path=("--link",))


def check_training_scenario(path: str | Path) -> None:
    """A validation scenario must be a training scenario (a workload and an algorithm), as
    ``run --real`` requires: a collective benchmark has no iteration time to compare and
    crashed the validation after the microbenchmarks (IndexError)."""
    from clustersim.scenario.schema import load_scenario

    scn = load_scenario(path)
    if scn.workload is None or not scn.algorithms:
        raise InputError(f"validation scenario {str(path)!r} is a collective benchmark, not a "
                         "training scenario: a validation runs training for real and needs "
                         "a 'workload' and an 'algorithm' (e.g. scenarios/real_*.yaml); "
                         "give training scenarios to --scenarios, or --no-validate",
                         path=("--scenarios",))


def check_rank_counts(args: argparse.Namespace, scenarios: Sequence[str | Path],
                      run_here: bool) -> None:
    """The rule of ``run --real`` (:func:`realrun.launch.check_rank_count`) for ``--np`` of
    the microbenchmarks and for every validation scenario's point that will run here.

    Why: ``calibrate --real --np 100`` started 203 processes on 2 cores and a 4,253-worker
    scenario 4,254 ranks, loading a shared machine and measuring only oversubscription.
    """
    if not args.real and not run_here:  # nothing starts here: realrun is not needed
        return
    from realrun.launch import check_hostfile, check_rank_count

    over = bool(getattr(args, "oversubscribe", False))
    if getattr(args, "hostfile", None) is not None:  # before any trace of DIR is cleared
        check_hostfile(args.hostfile)
    if args.real:
        try:
            check_rank_count(args.np, hostfile=args.hostfile, oversubscribe=over)
        except InputError as exc:
            raise InputError(f"--np {args.np} (ranks of the microbenchmarks): "
                             f"{exc.message}") from None
    if not run_here:
        return
    from clustersim.calibration.validate import scenario_point
    from realrun.train import prepare

    for path in scenarios:
        title, workers = scenario_point(path)
        try:
            setup = prepare(path, workers=workers)
        except InputError as exc:
            raise exc.located(file=str(path)) from None
        try:
            check_rank_count(setup.np, hostfile=args.hostfile, oversubscribe=over)
        except InputError as exc:
            raise InputError(f"validation scenario {str(path)!r} runs {title} on "
                             f"{setup.workers} worker(s) + {setup.servers} server(s): "
                             f"{exc.message}; or give --scenarios with smaller scenarios, "
                             f"or --no-validate") from None


def dir_problem(p: Path) -> str | None:
    """Why no directory can be used at ``p`` (None: it is one, or can be made), found by
    creating and removing a probe where it will go; nothing is left behind.  Unlike
    :func:`clustersim.report.output.unwritable` (a file) this wants a folder there."""
    try:
        missing = False
        d = p
        while True:
            try:
                os.lstat(d)
                break
            except OSError as exc:  # ENOTDIR: a file above; found below as "not a directory"
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR) or d == d.parent:
                    raise
                missing, d = True, d.parent
        if not stat.S_ISDIR(os.stat(d).st_mode):
            return "it is not a directory" if d == p else f"{str(d)!r} is not a directory"
        probe = d / f".clustersim.{secrets.token_hex(4)}.probe"
        if missing:
            probe.mkdir()
            probe.rmdir()
        else:
            os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            probe.unlink()
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()
    return None


def check_work_dir(args: argparse.Namespace, scenarios: Sequence[str | Path],
                   repeats: int) -> None:
    """``--work-dir`` and the folders the measuring writes in it (``bench``,
    ``validation/<scenario>/run<k>``) must be folders that can be written, before the first
    benchmark (a file at ``validation`` crashed after them: NotADirectoryError)."""
    work = Path(args.work_dir)
    if str(args.work_dir).strip() == "":
        raise InputError("cannot use --work-dir '': an empty folder name")
    bench = work / "bench"
    dirs = [work, bench]
    if args.real and args.rounds > 1:
        dirs += [bench / f"round{r}" for r in range(args.rounds)]
    if scenarios:
        runs = args.rounds * repeats if args.real else repeats
        dirs.append(work / "validation")
        for s in scenarios:
            dirs.append(work / "validation" / Path(s).stem)
            dirs += [work / "validation" / Path(s).stem / f"run{k}" for k in range(runs)]
    for d in dirs:
        why = dir_problem(d)
        if why is not None:
            where = "" if d == work else f" (it writes {str(d)!r})"
            raise InputError(f"cannot use --work-dir {str(args.work_dir)!r}{where}: {why}")


def platform_path(name: str) -> Path:
    """``--platform``: a path, a path under the shipped topologies' root
    (``topologies/dgx1_edr8.yaml``) or a shipped topology's bare name (``dgx1_edr8``).
    A name that is none of these is refused naming the shipped ones (QA 19 L12: "file not
    found" alone, where a scenario's ``platform:`` lists them)."""
    from clustersim.shipped import shipped_names, shipped_roots

    given = Path(name)
    cands = [given]
    for root in shipped_roots():
        cands.append(root / name)
        if not given.suffix:
            cands.append(root / "topologies" / f"{name}.yaml")
    for c in cands:
        if c.is_file():
            return c
    if given.exists():  # a folder or a device: load_platform says what it is
        return given
    shipped = shipped_names("topologies")
    raise InputError(f"--platform {name!r}: no such file, and no shipped topology has that "
                     f"name (shipped: {', '.join(shipped) or 'none'}; give a path or one of "
                     "these names)")
