"""What a failed, hung or stopped real run keeps: its measured iterations as ``metrics.json``.

Why: the project's rule is that a run which fails, hangs or is signalled keeps the data it
already measured.  Until this module that data stayed raw traces, and reading them took
knowing :func:`realrun.train.load_run` with ``partial=True``.  :func:`keep_partial` does it for
``clustersim run --real`` on its way out: when every worker traced at least one iteration after
the warm-up, ``DIR/metrics.json`` gets the fields of a successful run's, measured over the
iterations every worker completed (:mod:`realrun.coverage`, the same cut as ``calibrate
--runs``), marked ``"complete": false`` with the reason the run ``"stopped"``.

Separate from :mod:`realrun.train` (which writes a success's ``metrics.json``) because this
runs on the failure and stop paths, where the rules differ: never replace a success (a stop
that lands after the run finished), write atomically (a second signal mid-write leaves no half
file), and say in one line what was or was not kept.  It never raises for what it finds on
disk: a trace it cannot read is reported in that line, as the run's own error already was.  A
second Ctrl-C while it measures raises :class:`KeyboardInterrupt` out of it, for the caller to
end the program as a stop.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

__all__ = ["keep_partial", "stop_reason"]


def stop_reason(exc: BaseException) -> str:
    """The ``"stopped"`` text of a run ended by ``exc``: the first line of a failure's message,
    or the signal (``interrupted by SIGINT``, ``terminated by SIGTERM``)."""
    if isinstance(exc, KeyboardInterrupt):
        signum = getattr(exc, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        return f"interrupted by {name}" if signum == signal.SIGINT else f"terminated by {name}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def keep_partial(setup: Any, out_dir: str | Path, stopped: str, *, what: str) -> str:
    """Measure the traces a run left in ``out_dir`` and, if every worker completed a measured
    iteration, write them as ``out_dir/metrics.json`` (``complete: false``); the line to
    print either way.

    ``setup`` is the run's :class:`realrun.train.TrainSetup`; ``stopped`` the reason
    (:func:`stop_reason`); ``what`` the word the caller's lines use (``failure``, ``stop``).
    """
    out = Path(out_dir)
    head = f"measured before the {what}:"
    done = out / "metrics.json"
    if done.is_file():  # the success's, written before the stop landed: it stays
        return f"{head} the run had completed; its metrics are in {done}"
    if not any(out.glob("trace.rank*.jsonl")):
        return f"{head} nothing (no rank wrote a trace); no metrics.json written"
    from clustersim.report.output import write_json
    from realrun.api import load_traces
    from realrun.train import measure, traced_coverage

    try:
        headers, events = load_traces(out)
        cov = traced_coverage(setup, events)
        if cov.measured < 1:
            return f"{head} not enough for metrics ({_short(cov)}); no metrics.json written"
        result = measure(setup, out, None, headers, events, cov)
        write_json(done, {**result.to_dict(), "complete": False, "stopped": stopped})
    except Exception as exc:  # noqa: BLE001 - the run's own error is the news, not a traceback
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"{head} the traces could not be measured ({why}); no metrics.json written"
    ms = result.metrics.iteration_time * 1e3
    return (f"{head} {cov.completed} of {cov.asked} iterations on every worker "
            f"({cov.measured} after the {cov.warmup} warm-up), {ms:.1f} ms per iteration; "
            f"written to {done} (complete: false)")


def _short(cov: Any) -> str:
    """Why a coverage gives nothing to measure, in a phrase."""
    if cov.missing and cov.completed == 0:
        from realrun.verdict import format_ranks

        return f"rank(s) {format_ranks(cov.missing)} traced nothing"
    return (f"every worker completed {cov.completed} of {cov.asked} iteration(s), none "
            f"after the {cov.warmup} warm-up")
