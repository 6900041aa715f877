"""Checks across sections of a scenario: what each section allows alone, together does not.

Kept apart from :mod:`.schema` (which reads each section) so that the rules that tie two
sections together are in one place, each with the QA finding that asked for it (QA 16c).
Each was accepted by ``clustersim validate`` and then silently ignored one of the two, or
refused only by ``predict`` without a line:

* ``benchmark:`` beside ``workload:``/``algorithm:`` (the training part was dropped);
* ``global_batch`` beside ``batch_per_worker`` (one was dropped, which one depended on
  ``sweep.scaling``), and ``global_batch`` under weak scaling (split anyway, under a header
  that said "scaling: weak") - a global batch is the strong-scaling batch, so weak scaling
  with one is refused, naming the two ways to say what was meant;
* a ``benchmark.root`` that is no rank of a ``benchmark.ranks`` count;
* two algorithms (``algorithm`` and ``compare``) reported under one label;
* a worker count past the replicas ``placement.devices_per_worker`` leaves, which the message
  had blamed on the platform's device count;
* ``algorithm.overlap: true`` with no ``workload.bucket`` or bucketing ``workload.fusion``
  (QA 18), or with ``exchange: weights``: the gradient is then one exchange, which cannot
  start before the backward pass ends (or no gradient is exchanged at all), and the
  simulator ran it as ``overlap: false`` without a word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clustersim.errors import InputError
from clustersim.scenario.specs import AlgorithmSpec, BenchmarkSpec, SweepSpec, WorkloadSpec
from clustersim.scenario.yamlio import line_of

__all__ = ["check_kind", "check_batch", "check_root", "check_labels", "check_counts",
           "check_overlap", "too_many"]


def check_kind(raw: Mapping[str, Any]) -> None:
    """A scenario is a collective benchmark or a training prediction, not both."""
    if raw.get("benchmark") is None:
        return
    training = [k for k in ("workload", "algorithm", "compare") if raw.get(k) is not None]
    if training:
        raise InputError(f"a scenario is either a collective benchmark ('benchmark:') or a "
                         f"training prediction ('workload:' and 'algorithm:'), not both: "
                         f"remove {' and '.join(repr(k) for k in training)} or 'benchmark', "
                         f"or write two scenario files", path=(training[0],))


def check_batch(workload: WorkloadSpec | None, sweep: SweepSpec | None) -> None:
    """``batch_per_worker`` (weak scaling) or ``global_batch`` (strong scaling), one of them
    and matching ``sweep.scaling``."""
    if workload is None:
        return
    bpw, gb = workload.batch_per_worker, workload.global_batch
    strong = sweep is not None and sweep.scaling == "strong"
    if bpw is not None and gb is not None:
        keep = "global_batch (strong scaling)" if strong else "batch_per_worker (weak scaling)"
        raise InputError(f"give batch_per_worker or global_batch, not both: batch_per_worker "
                         f"is the batch of each worker under weak scaling, global_batch the "
                         f"batch split over the workers under sweep.scaling: strong; this "
                         f"sweep would keep {keep} and ignore the other (on the command "
                         f"line, --set workload.batch_per_worker=null or "
                         f"--set workload.global_batch=null removes one)",
                         path=("workload", "global_batch"))
    if gb is not None and sweep is not None and not strong:
        raise InputError(f"a global batch ({gb:,}) is split over the workers, which is strong "
                         f"scaling, but the sweep scales weakly (sweep.scaling: weak, the "
                         f"default); allowed: add 'scaling: strong' to sweep, or give "
                         f"batch_per_worker for weak "
                         f"scaling", path=("workload", "global_batch"))
    if bpw is not None and strong:
        raise InputError("strong scaling splits workload.global_batch over the workers, but "
                         "the workload gives batch_per_worker; allowed: give global_batch "
                         "instead, or scaling: weak", path=("sweep", "scaling"))


def check_root(bench: BenchmarkSpec | None) -> None:
    """``benchmark.root`` must be a rank at every ``benchmark.ranks`` count."""
    if bench is None:
        return
    for i, r in enumerate(bench.ranks):
        if bench.root >= r:
            raise InputError(f"root {bench.root} is not a rank of {r} (benchmark.ranks[{i}]: "
                             f"ranks 0 to {r - 1}); allowed: 0 to {min(bench.ranks) - 1}",
                             path=("benchmark", "root"))


def check_labels(algorithm: AlgorithmSpec | None, compare: Sequence[AlgorithmSpec],
                 raw_compare: Any) -> None:
    """Every algorithm of the scenario is reported under a title of its own."""
    seen: dict[str, str] = {}
    if algorithm is not None:
        seen[algorithm.title] = "algorithm"
    for i, alg in enumerate(compare):
        if alg.title in seen:
            item = raw_compare[i] if isinstance(raw_compare, list) else None
            where = ("compare", i, "label") if isinstance(item, Mapping) and "label" in item \
                else ("compare", i)
            raise InputError(f"two algorithms would both be reported as {alg.title!r} "
                             f"({seen[alg.title]} and compare[{i}]): give them distinct "
                             f"'label's", path=where)
        seen[alg.title] = f"compare[{i}]"


def too_many(what: str, count: int, ndev: int, devices_per_worker: int, raw: Any,
             path: tuple) -> InputError:
    """``count`` workers or ranks on a platform of ``ndev`` devices (or replicas, when
    ``placement.devices_per_worker`` groups them)."""
    if devices_per_worker <= 1:
        return InputError(f"{count} {what} but the platform has only {ndev} devices",
                          path=path)
    line = line_of(raw, ("placement", "devices_per_worker"))
    at = f", line {line}" if line else ""
    return InputError(f"{count} {what} but the platform has only {ndev} replicas of "
                      f"{devices_per_worker} devices (placement.devices_per_worker"
                      f"{at}; {ndev * devices_per_worker:,} devices grouped); allowed: at "
                      f"most {ndev} {what}, or a smaller devices_per_worker", path=path)


def check_counts(algorithms: Sequence[AlgorithmSpec], workers: Sequence[int]) -> None:
    """Worker counts the algorithms' all-reduce over every worker is defined for: Theano-MPI's
    copper tree needs a power of two.  Why here: ``validate`` said ok to ``workers: [1, 7]``,
    and ``predict`` and ``sweep`` refused it only while simulating, without the count's line
    (QA 17)."""
    from clustersim.algorithms.bsp import strategy_collective

    for alg in algorithms:
        if alg.name == "bsp":
            field, coll = "strategy", strategy_collective(str(alg.params.get("strategy")))[0]
        elif alg.name == "sync_easgd":
            field, coll = "allreduce", str(alg.params.get("allreduce"))
        else:
            continue
        if coll != "copper":
            continue
        for i, w in enumerate(workers):
            if w > 1 and w & (w - 1):
                raise InputError(f"{w} workers: {alg.title}'s copper tree ({field}: "
                                 f"{alg.params.get(field)}) is defined for 2, 4, 8, ... "
                                 f"workers; allowed: a power of two, or another {field}",
                                 path=("sweep", "workers", i))


def check_overlap(workload: WorkloadSpec | None, algorithm: AlgorithmSpec | None,
                  compare: Sequence[AlgorithmSpec]) -> None:
    """Overlap with the backward pass needs the gradient cut into buckets: with neither
    ``workload.bucket`` nor a bucketing ``workload.fusion`` (``whole`` is one bucket) it is
    one all-reduce after the backward pass (bsp.py turns overlap off for a single bucket),
    and with ``exchange: weights`` nothing is all-reduced during the backward pass at all
    (the weights are averaged after the update), so ``overlap: true`` there is refused
    rather than run as ``false`` unseen.  Only a scenario as written is checked: a sweep
    point or variant that sets ``bucket: none`` asks for that comparison and runs without
    overlap (docs/algorithms.md)."""
    if workload is None or algorithm is None:
        return
    fusion = workload.fusion
    one_bucket = workload.bucket_bytes is None and (fusion is None or fusion.mode == "whole")
    for i, alg in enumerate((algorithm, *compare)):
        if alg.params.get("overlap") is not True:
            continue
        where = ("algorithm",) if i == 0 else ("compare", i - 1)
        if alg.params.get("exchange") == "weights":
            raise InputError("overlap with the backward pass applies to the gradient "
                             "all-reduce (exchange: gradients); with exchange: weights the "
                             "weights are averaged after the update, every 'every' steps, "
                             "so nothing overlaps the backward pass: set overlap: false, or "
                             "exchange: gradients", path=(*where, "overlap"))
        if one_bucket:
            what = ("workload.fusion is whole" if fusion is not None else
                    "workload.bucket is not set (or none)")
            raise InputError("overlap with the backward pass needs the gradient in buckets, "
                             f"but {what}, so the gradient is one all-reduce after the whole "
                             "backward pass: set workload.bucket (e.g. 25 MiB, or 0 for one "
                             "per layer) or a bucketing workload.fusion (per_tensor, horovod, "
                             "ddp), or overlap: false", path=(*where, "overlap"))
