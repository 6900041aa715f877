"""A server's link demand per update is taken in the mix of the measured steps
(``clustersim.sim.linkdemand``: each peer's messages weighted by its step rate), not in the
mix of the whole run, where every worker makes the same number of steps.

The case (audit A, M1): a parameter server on 8-GPU nodes with 63 workers, seven of them
beside it on NVLink.  Those step 2.7x as often as the others, and none of their exchanges
crosses the server's NIC, so counted once per step each the NIC's demand read 9.7 ms per
update where the server applied one every 7.7 ms (a utilisation of 126 %, shown clipped at
100 %); tests/test_saturation_audit_a.py simulates that server."""

from __future__ import annotations

from clustersim.sim.linkdemand import RouteTable, link_demands


def _table() -> RouteTable:
    """Server on device 9; peer 1 reaches it over link 0 (1 s per message), peer 2 over
    link 1 (0.25 s per message); plan 0: 1 -> 9, plan 1: 2 -> 9."""
    t = RouteTable()
    t.add(1, 9, [0], [1.0])
    t.add(2, 9, [1], [0.25])
    return t


def test_each_peer_counts_at_its_share_of_the_rates() -> None:
    log = [0] * 10 + [1] * 10  # 10 messages each over the run
    # unweighted: link 0 carries 10 x 1 s
    assert link_demands(log, _table(), [9]) == {9: 10.0}
    # peer 2 steps 3x as often: in the measured mix it is 3/4 of the 20 messages, peer 1
    # 1/4 - link 0 then carries 5 messages of 1 s, link 1 15 of 0.25 s (3.75 s)
    got = link_demands(log, _table(), [9], rates={1: 1.0, 2: 3.0})[9]
    assert abs(got - 5.0) < 1e-12, got
    # where link 1's messages are the heavier, its demand is the max
    heavy = RouteTable()
    heavy.add(1, 9, [0], [1.0])
    heavy.add(2, 9, [1], [0.8])
    got = link_demands(log, heavy, [9], rates={1: 1.0, 2: 3.0})[9]
    assert abs(got - 15 * 0.8) < 1e-12, got


def test_one_pace_is_the_run_mix_to_the_bit() -> None:
    log = [0] * 7 + [1] * 7
    plain = link_demands(log, _table(), [9])
    assert link_demands(log, _table(), [9], rates={1: 0.1 + 0.2, 2: 0.3}) == plain
    # a peer without a rate (no worker on its device) counts at the mean rate
    assert link_demands(log, _table(), [9], rates={1: 2.0}) == plain
