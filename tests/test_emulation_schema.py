"""``run.convergence`` and ``run.emulation``: defaults, and one clear error per bad field."""

from __future__ import annotations

import math

import pytest
from _emulation import BASE

from clustersim.errors import InputError
from clustersim.scenario.emulation import parse_emulation
from clustersim.scenario.schema import load_scenario


def test_defaults() -> None:
    scn = load_scenario(BASE)
    assert scn.run.convergence == "auto"
    spec = scn.run.emulation
    assert (spec.task, spec.target, spec.eval_every, spec.eval_updates, spec.max_time,
            spec.max_iterations) == ("digits", 0.9, None, 10, math.inf, 2000)
    spec = parse_emulation({"task": "teacher_student", "eval_every": "500 ms", "lr": 0.2,
                            "batch": 0, "features": 4})
    assert spec.target == 0.99 and spec.eval_every == 0.5 and spec.eval_updates == 0
    assert spec.task_settings == {"lr": 0.2, "batch": 0, "features": 4}


@pytest.mark.parametrize("raw,field,words", [
    ({"task": "mnist"}, "task", "unknown emulation task 'mnist'"),
    ({"tsk": "digits"}, "tsk", "did you mean 'task'"),
    ({"task": "digits", "noise": 0.1}, "noise", "teacher_student task only"),
    ({"hidden": -1}, "hidden", ">= 0"),
    ({"batch": 0}, "batch", ">= 1"),
    ({"target": 1.5}, "target", "<= 1.0"),
    ({"eval_every": "0 s", "eval_updates": 0}, "eval_every", "positive time"),
    ({"eval_updates": 0}, "eval_updates", "sampling rule"),
    ({"max_time": "fast"}, "max_time", ""),
    ({"lr": 0}, "lr", "positive"),
])
def test_bad_fields_name_the_field(raw: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_emulation(raw)
    assert exc.value.path == ("run", "emulation", field)
    assert words in exc.value.message


def test_errors_carry_file_and_line() -> None:
    with pytest.raises(InputError) as exc:
        load_scenario(BASE, ["run.convergence=simulate"])
    msg = str(exc.value)
    assert "run.convergence" in msg and "knl_easgd_compare.yaml" in msg
    assert "emulate" in msg and "analytic" in msg
    with pytest.raises(InputError) as exc:
        load_scenario(BASE, ['run.emulation={"task": "digits", "features": 3}'])
    assert "run.emulation.features" in str(exc.value)


def test_an_algorithm_without_math_is_refused() -> None:
    from _emulation import emulate

    with pytest.raises(InputError) as exc:
        emulate("hybrid", {}, 2, {"task": "teacher_student"})
    assert "hybrid has none" in exc.value.message and exc.value.path == ("run", "convergence")
