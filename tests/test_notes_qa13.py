"""QA 13 F1: ``fidelity: auto`` runs a parameter server's point-to-point messages as max-min
flows up to 64 actors and as FIFO link queues above; on a communication-bound server the two
part by 40 % (885 samples/s at 60 workers, 1,471 at 61: "efficiency 164 %"), and no
output said which model a point ran.  ``predict`` now says so under the algorithm's table
when its points straddle the switch."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from clustersim.report.notes import switch_note
from clustersim.scenario.schema import load_scenario


def _pts(*workers: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(workers=w) for w in workers]


def test_a_parameter_server_across_the_switch_is_said_to_change_model() -> None:
    scn = load_scenario("scenarios/knl_unsaturated.yaml")
    algs = {a.title: a for a in scn.algorithms}
    ps = algs["Async SGD"]
    assert scn.run.fidelity == "auto"
    assert switch_note(scn, ps, _pts(17, 34, 63, 64)) == (
        "up to 63 workers its messages ran as flows sharing links max-min, from 64 on as FIFO "
        "link queues (run.fidelity: auto switches above 64 actors); on a communication-bound "
        "server the two can differ by 40 %, so the curve may jump there (docs/fidelity.md) - "
        "run.fidelity: flow gives one model throughout")
    # all on one side, another fidelity, a rendezvous master, no server: nothing to say
    assert switch_note(scn, ps, _pts(17, 34)) is None
    assert switch_note(scn, ps, _pts(64, 68)) is None
    flow = dataclasses.replace(scn, run=dataclasses.replace(scn.run, fidelity="flow"))
    assert switch_note(flow, ps, _pts(17, 68)) is None
    assert switch_note(scn, algs["Async EASGD"], _pts(17, 68)) is None
    assert switch_note(scn, algs["Sync EASGD"], _pts(17, 68)) is None
