"""clustersim's point-to-point models against SimGrid 3.32's SMPI on a parameter server.

``tests/data/simgrid/simgrid_ps.csv`` holds SimGrid's times of a closed-loop parameter server
(``bench/bench_simgrid_ps.py --record``; the MPI program ``bench/simgrid/ps_bench.c``, the
mapping ``bench/simgrid/sg_ps.py``): 1 server and N = 4..124 workers on a 128-host star of
10 Gb/s, 1 us links; each worker computes C = 100 ms (x 1 +- ``jitter``, a hash of worker and
iteration both simulators compute alike), pushes S = 10 MB (8 ms alone on a link) and waits
for S back; the server takes U per push (``comm``: U = 0, its link saturates from ~15 workers;
``update``: U = 20 ms, its update saturates from ~7).  20 iterations, the first a warm-up.
clustersim runs its Async SGD actors (one shard) with those compute times, as max-min flows
(``run.fidelity: flow``) and as FIFO link queues (``analytic``); nothing of SimGrid is needed
here.

What was measured, and is asserted:

* **Flows are SimGrid** - for the MPI server that does what clustersim's shard does: a
  receive posted for every worker, so every push travels as soon as it is sent
  (``prepost``), non-blocking replies (``isend``).  Within 1e-5 in every communication-bound
  row and every row without jitter; within 0.3 % in the update-bound rows with jitter (the
  shard serves pushes in arrival order, ps_bench.c those that completed during one update in
  rank order).
* **Queues are not SimGrid for that server where its link is saturated**: 16-64 % short
  (lockstep: without jitter the max-min server keeps every worker in step - all push
  together, all get their replies together, and the link idles while they compute: an
  iteration is C + 2 N S / B, flows and SimGrid alike; 10 % jitter breaks the lockstep up in
  part: 16-31 % at N >= 16).  Below saturation they differ too where the workers start in
  step (29 and 49 % at 4 and 8 workers); with 10 % jitter by 2 % and 10 %.
* **Queues are SimGrid for a plain MPI server** (a blocking ``MPI_Recv(MPI_ANY_SOURCE)``,
  ``anysource``, replies ``isend``), communication-bound: within 0.05 % at every N.  SMPI
  moves a rendezvous message only once the receive matches it, so pushes cross the server's
  link one at a time, in the order they were sent: a FIFO queue.  The same server is 28.6 %
  slower than both models when update-bound (its receive is not posted during an update, so
  a push's 8 ms no longer overlaps the update: N (U + S/B) per iteration), and with a
  blocking ``MPI_Send`` reply (``anysource/send``) twice the queues' time once its link
  saturates (N x 2 S / B: it sits through each reply).
* **Update-bound control**: flows and queues both within 0.3 % of SimGrid's ``prepost``.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "simgrid"))

import sg_ps  # noqa: E402

ROWS = sg_ps.read_csv(ROOT / "tests" / "data" / "simgrid" / "simgrid_ps.csv")
B = sg_ps.STAR128.bw_bytes


def _rows(mode: str, reply: str) -> list[sg_ps.PsRow]:
    return [r for r in ROWS if (r.mode, r.reply) == (mode, reply)]


PREPOST = _rows("prepost", "isend")
ANYSOURCE = _rows("anysource", "isend")
ANYSEND = _rows("anysource", "send")


@functools.cache
def _clustersim(case: sg_ps.PsCase, fidelity: str) -> tuple[float, float]:
    """(iteration s, updates/s); the program fields do not enter clustersim's run."""
    return sg_ps.clustersim_summary(case, fidelity)


def _cs(row: sg_ps.PsRow, fidelity: str) -> tuple[float, float]:
    base = sg_ps.PsCase(**{**row.case().__dict__, "mode": "prepost", "reply": "isend"})
    return _clustersim(base, fidelity)


def _err(a: float, b: float) -> float:
    return (a - b) / b


def _id(r: sg_ps.PsRow) -> str:
    return f"{'update' if r.update_s else 'comm'}-j{r.jitter:g}-N{r.workers}"


def _saturated_link(r: sg_ps.PsRow) -> bool:
    """The server's link cannot carry every worker's push at its own pace: N S/B exceeds a
    worker's iteration without waiting (C + 2 S/B)."""
    return r.update_s == 0 and r.workers * r.bytes / B > r.compute_s + 2 * r.bytes / B


def _saturated_update(r: sg_ps.PsRow) -> bool:
    return r.update_s > 0 and r.workers * r.update_s > r.compute_s + 2 * r.bytes / B + r.update_s


def test_the_recorded_grid() -> None:
    """What the file holds: 2 loads x 2 jitters x 6 worker counts x 3 server programs."""
    assert len(ROWS) == 72
    assert sorted({r.workers for r in ROWS}) == [4, 8, 16, 32, 60, 124]
    assert len(PREPOST) == len(ANYSOURCE) == len(ANYSEND) == 24
    assert all(r.case().matches_clustersim for r in PREPOST)
    assert all(r.iterations == 20 and r.bytes == 10_000_000 for r in ROWS)


@pytest.mark.parametrize("row", PREPOST, ids=_id)
def test_flows_are_simgrid(row: sg_ps.PsRow) -> None:
    """Flows against SimGrid's prepost/isend server: 1e-5 (0.3 % for the update-bound rows
    with jitter, where the two serve simultaneous pushes in different orders); the updates
    per second alike."""
    it, ups = _cs(row, "flow")
    tol = 3e-3 if (row.update_s > 0 and row.jitter > 0) else 1e-5
    assert abs(_err(it, row.sg_iter_s)) <= tol
    assert abs(_err(ups, row.sg_updates_per_s)) <= tol


@pytest.mark.parametrize("row", [r for r in PREPOST if r.update_s == 0 and r.jitter == 0],
                         ids=_id)
def test_flows_in_lockstep(row: sg_ps.PsRow) -> None:
    """Without jitter the max-min server keeps its workers in step: C + N S/B pushing (the
    link shared by all) + N S/B for the replies (likewise), in SimGrid and in flows."""
    s = row.bytes + sg_ps.ENVELOPE
    lat = 2 * sg_ps.STAR128.lat_s  # two links, one latency each, per message
    expect = row.compute_s + 2 * row.workers * s / B + 2 * lat
    assert row.sg_iter_s == pytest.approx(expect, rel=1e-6)


@pytest.mark.parametrize("row", [r for r in PREPOST if r.update_s == 0], ids=_id)
def test_queues_are_short_of_simgrid_on_a_busy_link(row: sg_ps.PsRow) -> None:
    """Queues against the same SimGrid server, communication-bound: short by 16-64 % where
    the link saturates (N >= 16), and below it by 29 / 49 % in lockstep, 2 / 10 % with
    jitter (N = 4 / 8)."""
    q = _err(_cs(row, "analytic")[0], row.sg_iter_s)
    if _saturated_link(row):
        assert (-0.65 if row.jitter == 0 else -0.32) <= q <= (-0.50 if row.jitter == 0
                                                              else -0.15)
    elif row.jitter == 0:
        assert -0.50 <= q <= -0.28
    else:
        assert -0.10 <= q <= -0.015


@pytest.mark.parametrize("row", [r for r in ANYSOURCE if r.update_s == 0], ids=_id)
def test_queues_are_simgrid_for_a_plain_mpi_server(row: sg_ps.PsRow) -> None:
    """A blocking MPI_Recv(ANY_SOURCE) server, communication-bound: queues within 0.05 %."""
    it, ups = _cs(row, "analytic")
    assert abs(_err(it, row.sg_iter_s)) <= 5e-4
    assert abs(_err(ups, row.sg_updates_per_s)) <= 5e-4


@pytest.mark.parametrize("row", [r for r in ANYSOURCE if _saturated_update(r)], ids=_id)
def test_a_plain_mpi_server_receives_between_updates(row: sg_ps.PsRow) -> None:
    """Update-bound, the plain server takes N (U + S/B) per iteration (no push arrives during
    an update): 28.6 % above both models' N U."""
    s = row.bytes + sg_ps.ENVELOPE
    assert row.sg_iter_s == pytest.approx(row.workers * (row.update_s + s / B), rel=1e-3)
    for fidelity in ("flow", "analytic"):
        assert _err(_cs(row, fidelity)[0], row.sg_iter_s) == pytest.approx(-2 / 7, abs=1e-3)


@pytest.mark.parametrize("row", [r for r in ANYSEND if _saturated_link(r)], ids=_id)
def test_a_server_blocked_in_its_replies(row: sg_ps.PsRow) -> None:
    """MPI_Recv(ANY_SOURCE) and a blocking MPI_Send reply, link saturated: N x 2 S/B per
    iteration, twice the queues'."""
    s = row.bytes + sg_ps.ENVELOPE
    assert row.sg_iter_s == pytest.approx(row.workers * 2 * s / B, rel=1e-3)
    assert row.sg_iter_s / _cs(row, "analytic")[0] == pytest.approx(2.0, rel=1e-3)


@pytest.mark.parametrize("row", [r for r in PREPOST if r.update_s > 0], ids=_id)
def test_update_bound_control(row: sg_ps.PsRow) -> None:
    """Server update-bound: flows and queues within 0.3 % of SimGrid and of each other."""
    flow, queue = _cs(row, "flow")[0], _cs(row, "analytic")[0]
    assert abs(_err(flow, row.sg_iter_s)) <= 3e-3
    assert abs(_err(queue, row.sg_iter_s)) <= 3e-3
    if _saturated_update(row):
        assert row.sg_iter_s == pytest.approx(row.workers * row.update_s, rel=3e-3)


#: ps_bench.c's compute_factor(w, k, 0.1), printed by the C function with printf("%a")
C_FACTORS = [
    (1, 0, float.fromhex("0x1.f89e43661e3a1p-1")),
    (1, 1, float.fromhex("0x1.f4cf67d1bf4bp-1")),
    (1, 19, float.fromhex("0x1.12fbeeb5adf2bp+0")),
    (2, 0, float.fromhex("0x1.0475261c5ce8p+0")),
    (2, 1, float.fromhex("0x1.17621e50e1467p+0")),
    (2, 19, float.fromhex("0x1.e74257ba0e7bap-1")),
    (60, 0, float.fromhex("0x1.dc7ec24e4b234p-1")),
    (60, 1, float.fromhex("0x1.f79e0dd07ee8bp-1")),
    (60, 19, float.fromhex("0x1.e12e0388621dep-1")),
    (124, 0, float.fromhex("0x1.0e46ce1a58af1p+0")),
    (124, 1, float.fromhex("0x1.062474ffa5a6dp+0")),
    (124, 19, float.fromhex("0x1.f8d39407fa50fp-1")),
]


def test_compute_factor_matches_the_c_program() -> None:
    """The jitter factors are the C program's to the bit (gcc, x86-64), and spread as said."""
    for w, k, v in C_FACTORS:
        assert sg_ps.compute_factor(w, k, 0.1) == v
    assert sg_ps.compute_factor(3, 7, 0.0) == 1.0
    vals = [sg_ps.compute_factor(w, k, 0.1) for w in range(1, 125) for k in range(20)]
    assert all(0.9 <= v < 1.1 for v in vals)
